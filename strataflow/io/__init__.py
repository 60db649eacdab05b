"""Readers and writers: in-memory collections, ranges, text files, .npy files."""
