"""The mapped store: blocks laid out in segment files and read zero-copy through mmap (the
TeraCache-style, serdes-free levels), and the page-cache accounting of their pages."""
