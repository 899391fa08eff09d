"""The docs' local commands run as written, in a shell that activated nothing.

A fenced block right after the line `<!-- clean-shell -->` in README.md, docs/*.md or
emr/README.md is a list of commands a user runs on their own machine. Each runs here from the
repository root with only HOME and a plain PATH, on small inputs: the documented placeholders
(`/path/to/hf-folder`, `pairs.parquet`, …) stand for tiny models and data made by the test, and
whatever the commands write under `artifacts/`, `data/` or `out/` (also as a setting's value,
`key=out/…`) lands in a temporary folder instead.
`$HOME` is expanded as the shell would. A command on `s3a://` URIs runs against a moto
server on 127.0.0.1 that holds the documented bucket's input and artifact, with what a host or
pod with an IAM role has on top of the clean shell: role credentials served on 127.0.0.1, no key
in the command; the documented S3 endpoint stands for the server.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "emr" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = "<!-- clean-shell -->"
CLEAN_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/local/bin:/usr/bin:/bin"}
WRITES_UNDER = ("artifacts/", "data/", "out/")
S3_ENDPOINT = "s3.us-east-1.amazonaws.com"  # the documented one; the moto server stands in for it
S3_INPUT, S3_MODEL = "s3a://my-bucket/pairs/2026-11-29/", "s3://my-bucket/models/my-dups/3/"

pytestmark = pytest.mark.slow


def marked_blocks(path: Path) -> list[list[str]]:
    """The commands of each marked block: comments dropped, `\\` continuations joined."""
    blocks = []
    for match in re.finditer(re.escape(MARKER) + r"\s*\n[ \t]*```[^\n]*\n(.*?)\n[ \t]*```", path.read_text(), re.S):
        joined = re.sub(r"\\\n\s*", " ", match.group(1))
        commands = [re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines()]
        blocks.append([c for c in commands if c and not c.startswith("#")])
    return blocks


def test_the_docs_mark_their_local_commands():
    blocks = {path.relative_to(REPO): marked_blocks(path) for path in DOCS}
    assert blocks[Path("README.md")], "README.md marks no block of local commands"
    for path, found in blocks.items():
        assert all(found), f"{path} has an empty marked block"


@pytest.fixture(scope="module")
def placeholders(tmp_path_factory, tiny_models) -> dict[str, str]:
    from tests.jobhelpers import pairs_frame

    data = tmp_path_factory.mktemp("user-data")
    pairs_frame(200).to_parquet(data / "pairs.parquet")
    return {
        "/path/to/hf-folder": str(tiny_models["pair-classification"]),
        "/path/to/encoder": str(tiny_models["embedding"]),
        "/path/to/classifier": str(tiny_models["text-classification"]),
        "examples.csv": str(REPO / "bench" / "data" / "intent_examples.csv"),
        "pairs.parquet": str(data / "pairs.parquet"),
    }


@pytest.fixture(scope="module")
def s3_platform(placeholders, compile_artifact):
    """The documented bucket on a moto server, and the environment of a host with an IAM role.
    AWS_ENDPOINT_URL sends boto3 (the artifact store) to the server, as S3_ENDPOINT does s3a."""
    import boto3

    from local_aws.moto_server import MotoServer
    from tests import moto_support

    server = MotoServer().start()
    try:
        with moto_support.RoleCredentials() as role:
            s3 = boto3.client("s3", endpoint_url=server.url, region_name=moto_support.REGION,
                              aws_access_key_id="setup", aws_secret_access_key="setup")
            bucket, input_prefix = S3_INPUT.split("/", 3)[2:]
            s3.create_bucket(Bucket=bucket)
            s3.upload_file(placeholders["pairs.parquet"], bucket, f"{input_prefix}part-00000.parquet")
            artifact = compile_artifact("pair-classification")
            for path in sorted(artifact.rglob("*")):
                if path.is_file():
                    s3.upload_file(str(path), bucket, S3_MODEL.split("/", 3)[3] + path.relative_to(artifact).as_posix())
            yield {"url": server.url, "role": role, "env": {**role.env(), "AWS_ENDPOINT_URL": server.url,
                                              "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                                              "AWS_EC2_METADATA_DISABLED": "true"}}
    finally:
        server.stop()


def localized(command: str, placeholders: dict[str, str], scratch: Path, s3_url: str | None = None) -> list[str]:
    args = []
    for token in shlex.split(command):
        token = token.replace("$HOME", CLEAN_ENV["HOME"])
        key, eq, value = token.partition("=")
        if token in placeholders:
            token = placeholders[token]
        elif token.startswith(WRITES_UNDER):
            token = str(scratch / token)
        elif eq and value.startswith(WRITES_UNDER):  # a setting's path: `--conf spark.….warehouse=out/warehouse`
            token = f"{key}={scratch / value}"
        elif s3_url:
            token = token.replace(S3_ENDPOINT, s3_url)
        args.append(token)
    return args


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_marked_commands_run_as_written_in_a_clean_shell(doc, placeholders, tmp_path, request):
    for block in marked_blocks(doc):
        for command in block:  # in order: later commands use what earlier ones wrote
            s3 = request.getfixturevalue("s3_platform") if "s3a://" in command else None
            args = localized(command, placeholders, tmp_path, s3 and s3["url"])
            env = {**CLEAN_ENV, **(s3["env"] if s3 else {})}
            proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{doc.name}: `{command}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"
            assert "Traceback" not in proc.stderr, f"{doc.name}: `{command}`:\n{proc.stderr[-3000:]}"
            if s3:  # the credentials came from the role, not from anything in the command or the shell
                assert s3["role"].served, f"{doc.name}: `{command}` never asked the role for credentials"
