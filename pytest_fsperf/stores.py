"""The session's own stores, as fixtures: MinIO (S3), the OSS gateway over it, Azurite and
fake-gcs-server, each on 127.0.0.1, started when a test or backend first needs one."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pytest_fsperf.store import served
from pytest_fsperf.store.minio import INSTALL as MINIO_INSTALL
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio
from pytest_fsperf.store.oss import OssServer, start_oss
from pytest_fsperf.store.served import Served


@pytest.fixture(scope="session")
def fsperf_s3() -> Iterator[S3Server]:
    """A MinIO server on 127.0.0.1 for this session: free port, fresh credentials and bucket.
    Skips the test when MinIO is not installed."""
    binary = find_minio()
    if binary is None:
        pytest.skip(f"MinIO is not installed: {MINIO_INSTALL}")
    server = start_minio(binary)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fsperf_oss(fsperf_s3: S3Server) -> Iterator[OssServer]:
    """An OSS endpoint on 127.0.0.1 for ossfs and ossfs2: a bucket of the session's MinIO
    behind the plugin's translating gateway (its metrics count every request)."""
    server = start_oss(fsperf_s3)
    try:
        yield server
    finally:
        server.stop()


def _served(name: str, install: str, start: Callable[[str], Served]) -> Iterator[Served]:
    binary = served.find(name)
    if binary is None:
        pytest.skip(f"{name} is not installed: {install}")
    server = start(binary)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fsperf_azurite() -> Iterator[Served]:
    """Azurite's blob service on 127.0.0.1 (for blobfuse2): an account of this session's."""
    yield from _served("azurite-blob", served.AZURITE_INSTALL, served.start_azurite)


@pytest.fixture(scope="session")
def fsperf_gcs() -> Iterator[Served]:
    """fake-gcs-server on 127.0.0.1 (for gcsfuse), in memory, with one bucket."""
    yield from _served("fake-gcs-server", served.FAKE_GCS_INSTALL, served.start_fake_gcs)
