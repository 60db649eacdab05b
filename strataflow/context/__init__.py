"""Context: the user's entry point, and the driver of one application, as a package of its
jobs (one module each), assembled in :mod:`strataflow.context.core`."""
from strataflow.context.core import Context

__all__ = ["Context"]
