#!/usr/bin/env python3
"""Writes link/headless.order: the functions a headless run executes, for build.rs to lay out first.

Why: the kernel maps `splice`'s code in large blocks around every page that runs, so a headless
run whose few thousand functions are spread over the whole `.text` keeps most of it resident.
Listing them for the linker packs them together (docs/benchmarks.md has the figures).

How (Linux, x86_64; needs valgrind, and root for the second pass):
1. Build the release `splice` with its symbols (`cargo rustc -- -C strip=none` changes only the
   final link, so every name is the one the normal release build has).
2. Run the three-turn benchmark's scenario once under callgrind: every function it executes.
   Callgrind cannot do `openat2`, so the file tools fail there; pass 3 finds what that misses.
   Where that stops the run early (a project file read beneath the root at its start), the
   functions it did execute are added to the current list instead of replacing it.
3. Relink with that list, then run the scenario for real with read-ahead off and the page cache
   dropped: any code page read outside the packed block holds a function the list missed, and
   every function on such a page is appended. Read-ahead is put back however this ends.

Run from the repository: `sudo python3 scripts/link_order.py` (or as root), then commit
link/headless.order. The names carry crate hashes that change with the Rust version and the
dependencies, so regenerate after updating either; a stale list is harmless (unknown names are
skipped) but the memory figure drifts back up, which the three-turn bench shows.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "link" / "headless.order"
PAGE = 4096


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, cwd=ROOT, **kw)


def build_unstripped(dest: Path) -> Path:
    run(["cargo", "rustc", "--release", "--locked", "--bin", "splice", "--", "-C", "strip=none"])
    shutil.copy2(ROOT / "target" / "release" / "splice", dest)
    return dest


def bench_executable() -> str:
    out = run(
        ["cargo", "bench", "--locked", "--bench", "three_turn", "--profile", "dev", "--no-run",
         "--message-format=json"],
        stdout=subprocess.PIPE, text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "three_turn":
            return msg["executable"]
    sys.exit("link_order: cargo did not name the three_turn bench executable")


def text_functions(binary: Path):
    """(address, size, name) of every function in .text, and .text's address minus its offset."""
    sections = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True,
                              check=True).stdout
    m = re.search(r"\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    if not m:
        sys.exit(f"link_order: no .text in {binary}")
    address, offset, size = (int(m.group(i), 16) for i in (1, 2, 3))
    functions = []
    symbols = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True,
                             text=True, check=True).stdout
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            a, s = int(parts[0], 16), int(parts[1], 16)
            if address <= a < address + size and s > 0:
                functions.append((a, s, parts[3]))
    functions.sort()
    return functions, address - offset, (offset, offset + size)


def executed_under_callgrind(binary: Path, bench: str, scratch: Path):
    """The functions the scenario executes, and whether it ran to a successful end there."""
    wrapper = scratch / "under-callgrind"
    wrapper.write_text(
        "#!/bin/sh\nvalgrind -q --tool=callgrind --demangle=no "
        f"--callgrind-out-file={scratch}/callgrind.%p {binary} \"$@\" | tee {scratch}/stream\n"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, SPLICE_BENCH_BIN=str(wrapper), SPLICE_BENCH_PROFILE="1")
    run([bench], env=env, stdout=subprocess.DEVNULL)
    names = set()
    for out in scratch.glob("callgrind.*"):
        for line in out.read_text(errors="replace").splitlines():
            m = re.match(r"c?fn=\(\d+\) (.*)", line)
            if m:
                # Callgrind marks recursion depth with a 'N suffix.
                names.add(re.sub(r"'\d+$", "", m.group(1).strip()))
    ended = [json.loads(line) for line in (scratch / "stream").read_text().splitlines()
             if '"run_end"' in line or '"error"' in line]
    complete = any(e.get("type") == "run_end" and e.get("status") == "success" for e in ended)
    if not complete:
        print(f"link_order: under callgrind the run did not succeed ({ended}); the functions "
              "it executed are added to the current list, and pass 3 finds the rest",
              file=sys.stderr)
    return names, complete


def cached_pages(path: Path):
    """File pages of `path` in the page cache (mincore over a read-only mapping)."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        mapping = libc.mmap(None, size, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE
        pages = (size + PAGE - 1) // PAGE
        vec = (ctypes.c_ubyte * pages)()
        if libc.mincore(mapping, size, vec) != 0:
            sys.exit(f"link_order: mincore failed: errno {ctypes.get_errno()}")
        libc.munmap(mapping, size)
        return {i for i in range(pages) if vec[i] & 1}
    finally:
        os.close(fd)


def pages_read_by_a_run(binary: Path, bench: str):
    """Run the scenario for real with read-ahead off and a cold cache: the pages it reads."""
    device = readahead_file(binary)
    old = device.read_text().strip()
    try:
        device.write_text("0")
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3")
        env = dict(os.environ, SPLICE_BENCH_BIN=str(binary), SPLICE_BENCH_PROFILE="1")
        run([bench], env=env, stdout=subprocess.DEVNULL)
        return cached_pages(binary)
    finally:
        device.write_text(old)


def readahead_file(path: Path) -> Path:
    """/sys/block/<disk>/queue/read_ahead_kb of the disk holding `path`."""
    dev = os.stat(path).st_dev
    link = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    for candidate in (link, link.parent):
        ra = candidate / "queue" / "read_ahead_kb"
        if ra.exists():
            return ra
    sys.exit(f"link_order: no read_ahead_kb for the disk of {path}")


def main():
    if os.geteuid() != 0:
        sys.exit("link_order: run as root (pass 3 drops the page cache and sets read-ahead)")
    for tool in ("valgrind", "readelf", "nm"):
        if shutil.which(tool) is None:
            sys.exit(f"link_order: {tool} is needed")
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        bench = bench_executable()
        binary = build_unstripped(scratch / "splice")
        functions, _, _ = text_functions(binary)
        executed, complete = executed_under_callgrind(binary, bench, scratch)
        address = {name: a for a, _, name in functions}
        hot = sorted((n for n in executed if n in address), key=lambda n: address[n])
        if not complete and ORDER.exists():
            # Callgrind stopped short (a system call it lacks, such as `openat2`, refused
            # early): keep what the current list still names, then what this run added.
            kept = [n for n in ORDER.read_text().split() if n in address]
            hot = kept + [n for n in hot if n not in set(kept)]
        print(f"link_order: {len(hot)} functions executed under callgrind", file=sys.stderr)
        ORDER.parent.mkdir(exist_ok=True)
        ORDER.write_text("\n".join(hot) + "\n")

        binary = build_unstripped(scratch / "splice-ordered")
        functions, delta, (text_start, text_end) = text_functions(binary)
        hot_set = set(hot)
        packed_end = max(a + s for a, s, n in functions if n in hot_set) - delta
        read = {p for p in pages_read_by_a_run(binary, bench)
                if packed_end <= p * PAGE < text_end}
        missed = []
        for a, s, name in functions:
            offset = a - delta
            if offset < packed_end or name in hot_set:
                continue
            if any(p in read for p in range(offset // PAGE, (offset + s - 1) // PAGE + 1)):
                hot_set.add(name)
                missed.append(name)
        print(f"link_order: {len(read)} code pages read past the packed block, "
              f"{len(missed)} functions on them appended", file=sys.stderr)
        ORDER.write_text("\n".join(hot + missed) + "\n")
    print(f"link_order: wrote {ORDER.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
