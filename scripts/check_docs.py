#!/usr/bin/env python3
"""The documents hold together: every relative link leads somewhere, and every option is named.

  check_docs.py ROOT [PROGRAM...]            checks the tree at ROOT
  check_docs.py --planted ROOT [PROGRAM...]  checks a copy of ROOT's documents, clean, then with
                                             each planted break below, which must be reported,
                                             and alone

What is checked (one line per problem; exit status 1 when there is any, 0 otherwise):
- Links. Every relative link of every Markdown file of the tree (git ls-files '*.md' in a git
  work tree; else every *.md outside hidden and build* folders), inline [text](target) and
  reference [label]: target alike, outside code: the file (or folder) must exist, and a
  #anchor must be made by a heading of the target (or of the file itself, for a bare #anchor),
  by GitHub's rules: the heading's text, lowercased, punctuation but '-' and '_' dropped,
  spaces turned into '-', a repeated heading getting -1, -2, ...; or an <a id|name="...">.
  Links with a scheme (https:, mailto:, file:, ...) are not followed.
- Options. Every long option (--name) in the --help of each PROGRAM given (the built programs:
  ctest passes dd_file_send, dd_file_receive, dd_iotest and dd_linksim) and of the operators'
  scripts in ROOT/scripts that have one (owlDftsSend, dd_reconcile, dd_resend_request) must be
  named by a document: README.md, docs/*.md, SECURITY.md, conf/* (as --name, or as a
  "name = value" setting, commented out or not) or packaging/man/*.h2m (where '-' is written
  '\\-'). An option --help does not print (a hidden test-only one) is not required.
"""

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

SCRIPTS_WITH_HELP = ("owlDftsSend", "dd_reconcile", "dd_resend_request")
HELP_TIMEOUT_S = 30
OPTION = re.compile(r"(?<![\w-])--([A-Za-z0-9][A-Za-z0-9-]*)")
FENCE = re.compile(r"^\s*(```|~~~)")
# [text](target "title"), the text holding no brackets but whole [nested] ones.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:id|name)\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files(root):
    """The Markdown files of the tree, as paths relative to root, sorted."""
    if os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"],
                             capture_output=True, check=False)
        if out.returncode == 0:
            return sorted(p for p in out.stdout.decode().split("\0") if p)
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in files:
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks, inline code blanked."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"(`+)(?:(?!\1).)+?\1", "``", line)


def slug(heading):
    """The anchor GitHub makes of a heading's text (before the -N of a repeated one)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor the headings (and <a id/name>) of a Markdown text make."""
    made, seen = set(), {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        made.update(HTML_ANCHOR.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        made.add(base if count == 0 else f"{base}-{count}")
    return made


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def link_targets(text):
    """(line number, target) of every link outside code."""
    for number, line in prose_lines(text):
        for m in INLINE_LINK.finditer(line):
            yield number, m.group(1).strip("<>")
        m = REFERENCE_LINK.match(line)
        if m:
            yield number, m.group(1).strip("<>")


def check_links(root):
    """One line per broken relative link or anchor in the tree's Markdown files."""
    problems, cache = [], {}

    def anchors_of(path):
        if path not in cache:
            cache[path] = anchors(read(path))
        return cache[path]

    for rel in markdown_files(root):
        source = os.path.join(root, rel)
        if not os.path.isfile(source):
            continue
        for number, target in link_targets(read(source)):
            if SCHEME.match(target) or target.startswith("//"):
                continue
            path, _, anchor = target.partition("#")
            path = path.split("?")[0]
            resolved = source if not path else os.path.normpath(
                os.path.join(os.path.dirname(source), path))
            where = f"{rel}:{number}"
            if not os.path.exists(resolved):
                shown = os.path.relpath(resolved, root)
                problems.append(f"{where}: link to {target}: no file {shown}")
            elif anchor and os.path.isfile(resolved) and resolved.endswith(".md") and \
                    anchor not in anchors_of(resolved):
                shown = os.path.relpath(resolved, root)
                problems.append(f"{where}: link to {target}: no heading of {shown} makes #{anchor}")
    return problems


def documents(root):
    """The text that may name an option: (path relative to root, text, is a config file)."""
    paths = [("README.md", False), ("SECURITY.md", False)]
    for folder, suffix, is_conf in (("docs", ".md", False), ("conf", "", True),
                                    ("packaging/man", ".h2m", False)):
        full = os.path.join(root, folder)
        if os.path.isdir(full):
            for name in sorted(os.listdir(full)):
                if name.endswith(suffix) and os.path.isfile(os.path.join(full, name)):
                    paths.append((f"{folder}/{name}", is_conf))
    docs = []
    for rel, is_conf in paths:
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            text = read(path)
            if rel.endswith(".h2m"):
                text = text.replace("\\-", "-")
            docs.append((rel, text, is_conf))
    return docs


def named_options(docs):
    """Every option the documents name: --name anywhere, or a config file's "name =" line."""
    names = set()
    for _, text, is_conf in docs:
        names.update(OPTION.findall(text))
        if is_conf:
            names.update(re.findall(r"^[ \t]*#?[ \t]*([a-z0-9][a-z0-9-]*)[ \t]*=", text, re.M))
    return names


def help_text(command):
    """(text, problem) of COMMAND --help: its output, or why there is none."""
    try:
        out = subprocess.run(command + ["--help"], capture_output=True, text=True,
                             timeout=HELP_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "", f"{' '.join(command)} --help: cannot run it: {e}"
    if out.returncode != 0:
        return "", f"{' '.join(command)} --help: exit status {out.returncode}"
    return out.stdout + out.stderr, None


def check_options(root, programs):
    """One line per option of a program's --help that no document names."""
    commands = [[p] for p in programs]
    for name in SCRIPTS_WITH_HELP:
        script = os.path.join(root, "scripts", name)
        if os.path.isfile(script) and os.stat(script).st_mode & stat.S_IXUSR:
            commands.append([script])
    names = named_options(documents(root))
    problems = []
    for command in commands:
        text, problem = help_text(command)
        if problem:
            problems.append(problem)
            continue
        program = os.path.basename(command[0])
        for option in sorted(set(OPTION.findall(text))):
            if option not in names:
                problems.append(f"{program} --{option}: no document names it (README.md, "
                                "docs/*.md, SECURITY.md, conf/*, packaging/man/*.h2m)")
    return problems


def check(root, programs):
    """Every problem of the tree at root, one line each."""
    return check_links(root) + check_options(root, programs)


# The planted breaks: NAME, {file of the copy: text appended}, options the fake program's --help
# prints, and what the report must say (None: a case that must pass, for what the check must not
# report).
PLANTED = [
    ("a link to a missing file", {"README.md": "[planted](docs/no-such-file.md)\n"}, [],
     "README.md:@LINE@: link to docs/no-such-file.md: no file docs/no-such-file.md"),
    ("a link to a missing heading", {"README.md": "See [planted](docs/planted.md#nowhere).\n"},
     [], "link to docs/planted.md#nowhere: no heading of docs/planted.md makes #nowhere"),
    ("a bare anchor no heading makes", {"docs/planted.md": "[back](#no-such-part)\n"}, [],
     "docs/planted.md:@LINE@: link to #no-such-part: no heading of docs/planted.md makes "
     "#no-such-part"),
    ("an option no document names", {}, ["--ddft-planted-option"],
     "fake_program --ddft-planted-option: no document names it"),
    ("a heading's anchor, a repeated one, an HTML anchor",
     {"README.md": "[a](docs/planted.md#a-hot-folder-dd_file_send---watch) "
                   "[b](docs/planted.md#twice-1) [c](docs/planted.md#kept)\n"}, [], None),
    ("links in code are not links",
     {"README.md": "`[x](nowhere.md)`\n```\n[y](nowhere.md)\n```\n"}, [], None),
    ("links with a scheme, and to a folder",
     {"README.md": "[w](https://example.invalid/x.md) [d](docs/)\n"}, [], None),
    ("an option named only by a config file's setting",
     {"conf/planted.conf": "# ddft-planted-setting = 1\n"}, ["--ddft-planted-setting"], None),
    ("an option named only by a man page source",
     {"packaging/man/planted.h2m": ".B \\-\\-ddft\\-planted\\-man\n"}, ["--ddft-planted-man"],
     None),
]
PLANTED_DOC = "# Planted\n\n## A hot folder: `dd_file_send --watch`\n\n## Twice\n\n## Twice\n\n" \
              "<a id=\"kept\"></a>\n"


def copy_documents(root, copy):
    """Copies what the check reads (the Markdown files, conf/, packaging/man/) into copy, and
    stands an empty file (or folder) in for every other file a link leads to."""
    for rel in markdown_files(root):
        if os.path.isfile(os.path.join(root, rel)):
            os.makedirs(os.path.dirname(os.path.join(copy, rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(copy, rel))
    for folder in ("conf", "packaging/man"):
        if os.path.isdir(os.path.join(root, folder)):
            shutil.copytree(os.path.join(root, folder), os.path.join(copy, folder))
    for rel in markdown_files(copy):
        source = os.path.join(copy, rel)
        for _, target in link_targets(read(source)):
            path = target.partition("#")[0]
            if not path or SCHEME.match(target):
                continue
            real = os.path.normpath(os.path.join(root, os.path.dirname(rel), path))
            stand_in = os.path.normpath(os.path.join(copy, os.path.dirname(rel), path))
            if os.path.exists(stand_in) or not real.startswith(root + os.sep):
                continue
            if os.path.isdir(real):
                os.makedirs(stand_in, exist_ok=True)
            elif os.path.isfile(real):
                os.makedirs(os.path.dirname(stand_in), exist_ok=True)
                open(stand_in, "w").close()


def plant(copy, name, appended, options, want, fake):
    """Runs one planted case in copy; returns what went wrong ("" when nothing did)."""
    saved = {}
    for rel, text in appended.items():
        path = os.path.join(copy, rel)
        saved[rel] = read(path) if os.path.exists(path) else None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        if want:
            want = want.replace("@LINE@", str(len(read(path).splitlines())))
    with open(fake + ".help", "w", encoding="utf-8") as f:
        f.write("Usage: fake_program [OPTIONS]\n" + "".join(f"  {o}  planted\n" for o in options))
    out = check(copy, [fake])
    for rel, text in saved.items():
        path = os.path.join(copy, rel)
        if text is None:
            os.remove(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if want is None:
        return f"{name}: reported, but must not be: {out}" if out else ""
    if len(out) != 1 or want not in out[0]:
        return f"{name}: want one line with \"{want}\", got: {out}"
    return ""


def planted(root):
    """The --planted mode: every planted break reported, and alone; 0 when all are."""
    base = tempfile.mkdtemp(prefix="ddft_docs.")
    try:
        copy = os.path.join(base, "tree")
        os.makedirs(copy)
        copy_documents(os.path.realpath(root), copy)
        with open(os.path.join(copy, "docs", "planted.md"), "w", encoding="utf-8") as f:
            f.write(PLANTED_DOC)
        fake = os.path.join(base, "fake_program")
        with open(fake, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\ncat \"$0.help\"\n")
        os.chmod(fake, 0o755)
        failures = [f for case in [("the clean copy", {}, [], None)] + PLANTED
                    if (f := plant(copy, *case, fake))]
    finally:
        shutil.rmtree(base)
    for failure in failures:
        print(f"FAIL {failure}")
    if not failures:
        print(f"ok   each of {len(PLANTED)} planted cases as it must be, and the clean copy clean")
    return 1 if failures else 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if argv[1] == "--planted":
        return planted(argv[2]) if len(argv) > 2 else main(argv[:1])
    problems = check(argv[1], argv[2:])
    for problem in problems:
        print(problem)
    if not problems:
        print("ok   every relative link and anchor leads somewhere; every option is named")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
