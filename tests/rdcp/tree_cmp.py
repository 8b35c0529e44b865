#!/usr/bin/env python3
"""tree_cmp.py A B: compare two trees that may be deeper than PATH_MAX (diff -r and find
cannot reach into them): each entry's type, mode, mtime, size, link count, contents, link
target and extended attributes (user.* and system.posix_acl_*, FIFOs' too). Walks by
chdir, so no path it uses is longer than one name. Prints "N entries" or the first entries
that differ; exit 0 iff none do."""
import os
import stat
import sys


def attrs(name):
    try:
        keys = os.listxattr(name, follow_symlinks=False)
    except OSError:
        return None
    return sorted((k, os.getxattr(name, k, follow_symlinks=False)) for k in keys)


def snap(top):
    out = {}
    here = os.open(".", os.O_RDONLY)
    os.chdir(top)

    def walk(rel):
        st = os.stat(".")
        out[rel or "."] = ("d", st.st_mode, st.st_mtime_ns, attrs("."))
        for n in sorted(os.listdir(".")):
            r = f"{rel}/{n}" if rel else n
            st = os.lstat(n)
            if stat.S_ISDIR(st.st_mode):
                os.chdir(n)
                walk(r)
                os.chdir("..")
            elif stat.S_ISREG(st.st_mode):
                with open(n, "rb") as f:
                    data = f.read()
                out[r] = ("f", st.st_mode, st.st_mtime_ns, st.st_nlink, data, attrs(n))
            elif stat.S_ISLNK(st.st_mode):
                out[r] = ("l", os.readlink(n))
            else:
                out[r] = ("o", st.st_mode, st.st_mtime_ns, attrs(n))

    walk("")
    os.fchdir(here)
    os.close(here)
    return out


a, b = snap(sys.argv[1]), snap(sys.argv[2])
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
if bad:
    for k in bad[:3]:
        print(f"differs: {k[-60:]}: {str(a.get(k))[:80]} / {str(b.get(k))[:80]}")
    sys.exit(1)
print(f"{len(a)} entries")
