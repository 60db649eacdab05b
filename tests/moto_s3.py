"""An S3 API served in this process on 127.0.0.1 by moto's server, for the tests of
``s3://`` paths (s3fs and moto are in the dev extras that ``make test`` installs)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import pytest


@contextmanager
def moto_s3(bucket: str) -> Iterator[dict]:
    """A fresh server with ``bucket`` made on it; yields the s3fs options that reach it
    (``fsspec.filesystem("s3", **options)``, or ``fsspec.config.conf["s3"]``)."""
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        yield {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    finally:
        server.stop()
