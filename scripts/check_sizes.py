#!/usr/bin/env python3
"""The measurements of scripts/check_sizes.sh, which holds the allow-list and says how to run it.

  check_sizes.py ROOT ALLOW_LIST FUNCTION_LIMIT check|list

check: prints every file over FILE_LIMIT lines and every function over FUNCTION_LIMIT lines in
ROOT's product folders (C++) and in ROOT/scripts (Python and shell), marking the allowed ones;
exits 1 when one is not allowed, 0 otherwise. list: prints "path name lines" for every function
over the limit in the product's .cpp files, for the comparison with clang-tidy; exits 0.

How a function is measured:
- C++: the figure of clang-tidy's readability-function-size (LineThreshold), the line of the
  body's end minus the line of its start (the line shown is the start's). The body of an
  ordinary function runs from its opening brace to its closing one; that of a function-try-block
  from `try` to the closing brace of its last handler. Comments, literals and preprocessor lines
  are blanked, then every brace block is classified by what stands before its opening brace: a
  function body (free function, member, operator, constructor with its initializer list, lambda
  and template lambda) follows `)` with optional qualifiers, a `throw()` or `noexcept(...)`, a
  trailing return type or a function-try-block's `try`, or a lambda's `]` or template parameter
  list. Blocks after if/for/while/switch/catch are statements; blocks after anything else
  (namespace, class, `=`, an initializer) are not functions. A lambda over the limit is reported
  on its own, besides counting in the function around it (clang-tidy counts it only there).
- Python (a .py file, or a script whose first line names python): every def, methods and nested
  defs included, from its def line to its last line, both counted (decorators are not).
- Shell (a .sh file, or a script whose first line names bash or sh): every `NAME() {` (or
  `function NAME {`) whose brace ends its line, from that line to the first later line at the
  same indentation that starts with the closing brace, the line of its closing brace minus that
  of its opening brace, as for C++.
A file is measured in lines (newlines). Files elsewhere in scripts/ (neither Python nor shell)
are not measured.
"""

import ast
import fnmatch
import os
import re
import sys

FILE_LIMIT = 600
CPP_DIRS = ("common", "sender", "receiver", "iotest", "linksim")
CPP_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
SCRIPT_DIR = "scripts"
CONTROL = {"if", "for", "while", "switch", "catch", "constexpr"}
# What may stand between a parameter list's ')' and the body's '{'.
QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "volatile", "&", "&&",
              "constexpr", "consteval", "static"}
# The tokens of a trailing return type "-> T" (besides identifiers).
TYPE_TOKENS = {"::", "<", ">", "*", "&", "&&", ","}


def parse_allow_list(text):
    """The entries "PATH_GLOB[:FUNCTION] | reason" as (glob, function or "") pairs; exits with a
    message on an entry without a reason."""
    allow = []
    for line in text.splitlines():
        if not line.strip():
            continue
        entry, _, reason = line.partition("|")
        path, _, function = entry.strip().partition(":")
        if not reason.strip():
            sys.exit(f"check_sizes: allow-list entry without a reason: {line.strip()}")
        allow.append((path, function))
    return allow


def blank(text):
    """Returns C++ text with comments, literals and preprocessor lines replaced by spaces (newlines
    kept, so that line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    keep = lambda s: out.append("".join(c if c == "\n" else " " for c in s))
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            # A directive runs to the end of the line, continuations included.
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            keep(text[i:j])
            i = j
            continue
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            keep(text[i:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            keep(text[i:j])
            i = j
        elif c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_0-9]+").match(text, i)
            word = m.group(0)
            j = m.end()
            if word in ("R", "LR", "uR", "UR", "u8R") and j < n and text[j] == '"':
                # Raw string: R"delim( ... )delim"
                k = text.index("(", j)
                end = ")" + text[j + 1:k] + '"'
                e = text.index(end, k) + len(end)
                out.append(word)
                keep(text[j:e])
                i = e
            else:
                out.append(word)
                i = j
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            # A number, digit separators (1'000) and exponents (1e-3, 0x1p+4) included.
            m = re.compile(r"\.?[0-9](?:[eEpP][+-]|[A-Za-z_0-9.'])*").match(text, i)
            out.append(m.group(0))
            i = m.end()
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            keep(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r"[A-Za-z_~][A-Za-z_0-9]*|::|->|&&|\S")
IDENT = re.compile(r"[A-Za-z_~]")
OPEN = {")": "(", "]": "[", "}": "{"}


class CppCode:
    """The tokens of blanked C++ code, their lines, and which bracket matches which."""

    def __init__(self, code):
        self.toks, self.lines = [], []
        line, last = 1, 0
        for m in TOKEN.finditer(code):
            line += code.count("\n", last, m.start())
            last = m.start()
            self.toks.append(m.group(0))
            self.lines.append(line)
        self.match = {}  # index of each closing bracket -> index of its opening one, and back
        stack = []
        for i, t in enumerate(self.toks):
            if t in "([{":
                stack.append(i)
            elif t in OPEN and stack:
                self.match[i] = stack.pop()
                self.match[self.match[i]] = i

    def tok(self, i):
        return self.toks[i] if 0 <= i < len(self.toks) else ""

    def skip_qualifiers(self, i):
        """From toks[i] backwards over const, noexcept(...), throw(), override and the like."""
        while i >= 0:
            if self.toks[i] in QUALIFIERS:
                i -= 1
            elif (self.toks[i] == ")" and i in self.match
                  and self.tok(self.match[i] - 1) in ("noexcept", "throw")):
                i = self.match[i] - 2
            else:
                return i
        return i

    def skip_trailing_return(self, j):
        """toks[j] ends what stands after a parameter list: when it is a trailing return type
        "-> T" (T may hold parentheses, as decltype(x) does), the index before the arrow after
        qualifiers; else j."""
        k = j
        while k >= 0:
            t = self.toks[k]
            if t == ")" and k in self.match:
                k = self.match[k] - 1
            elif IDENT.match(t) or t in TYPE_TOKENS:
                k -= 1
            else:
                break
        if k < j and self.tok(k) == "->":
            before = self.skip_qualifiers(k - 1)
            if self.tok(before) == ")":
                return before
        return j

    def angle_open(self, close):
        """The index of the '<' that the '>' at toks[close] closes, or -1."""
        depth = 0
        for k in range(close, -1, -1):
            t = self.toks[k]
            if t == ">":
                depth += 1
            elif t == "<":
                depth -= 1
                if depth == 0:
                    return k
            elif t in (";", "{", "}"):
                return -1
        return -1

    def after_lambda_introducer(self, i):
        """Whether toks[i] ends a lambda's capture list, or its template parameter list."""
        if self.tok(i) == ">":
            i = self.angle_open(i) - 1
        return self.tok(i) == "]"

    def operator_name(self, start):
        """toks[start] is the '(' of a parameter list: "operator..." when an operator's name stands
        before it (operator==, operator(), operator[], operator new[], operator bool), else None."""
        k = start - 1
        while k >= 0 and start - k <= 4 and self.toks[k] not in (";", "{", "}"):
            if self.toks[k] == "operator":
                words = self.toks[k + 1:start]
                spaced = words and IDENT.match(words[0])
                return "operator" + (" " if spaced else "") + "".join(words)
            k -= 1
        return None

    def name_of_call(self, close):
        """toks[close] is the ')' of a parameter list: the function's name, or None."""
        start = self.match.get(close)
        if start is None or start == 0:
            return None
        op = self.operator_name(start)
        if op:
            return op
        if self.after_lambda_introducer(start - 1):
            return "lambda"
        name = self.toks[start - 1]
        if name == ">":  # an explicit specialization, f<int>(...)
            name = self.tok(self.angle_open(start - 1) - 1)
        if not IDENT.match(name) or name in CONTROL:
            return None
        return name

    def initializer_list_start(self, i):
        """toks[i] closes the last member initializer "x_(...)" or "x_{...}" of a constructor:
        walks back over the list and returns the index of its ':', or None."""
        while i in self.match:
            j = self.match[i] - 1
            while j >= 1 and IDENT.match(self.toks[j]) and self.toks[j - 1] == "::":
                j -= 2
            if j < 1 or not IDENT.match(self.toks[j]):
                return None
            if self.toks[j - 1] == ",":
                i = j - 2
            elif self.toks[j - 1] == ":":
                return j - 1
            else:
                return None
        return None

    def head(self, brace):
        """What the '{' at toks[brace] opens: (name, index of the token the body starts at) for a
        function body, else (None, None)."""
        start = brace
        j = self.skip_qualifiers(brace - 1)
        if self.tok(j) == "try":
            start = j
            j = self.skip_qualifiers(j - 1)
        j = self.skip_trailing_return(j)
        if j < 0:
            return None, None
        if self.after_lambda_introducer(j):
            return "lambda", start
        if self.toks[j] not in (")", "}"):
            return None, None
        colon = self.initializer_list_start(j)
        if colon is not None:
            k = self.skip_qualifiers(colon - 1)
            if self.tok(k) == "try":
                start, k = k, self.skip_qualifiers(k - 1)
            if self.tok(k) == ")":  # a constructor's parameter list, then its initializers
                return self.name_of_call(k), start
            # else "public: f() {" and the like: the ':' ends a label
        if self.toks[j] == ")":
            return self.name_of_call(j), start
        return None, None

    def body_end(self, brace, start):
        """The index of the token that ends the body opened at toks[brace]: its '}', or, for a
        function-try-block (toks[start] is `try`), the '}' of its last handler."""
        end = self.match[brace]
        if self.toks[start] != "try":
            return end
        while self.tok(end + 1) == "catch" and self.tok(end + 2) == "(":
            handler = self.match.get(end + 2, -1) + 1
            if self.tok(handler) != "{" or handler not in self.match:
                break
            end = self.match[handler]
        return end

    def functions(self):
        """Yields (name, first_line, lines) for every function body."""
        for i, t in enumerate(self.toks):
            if t != "{" or i not in self.match:
                continue
            name, start = self.head(i)
            if name:
                end = self.body_end(i, start)
                yield name, self.lines[start], self.lines[end] - self.lines[start]


def cpp_functions(text, path):
    return CppCode(blank(text)).functions()


def python_functions(text, path):
    """Yields (name, first_line, lines) for every def; a file Python cannot parse is an error."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        sys.exit(f"check_sizes: {path}:{e.lineno}: not Python that python3 parses: {e.msg}")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


SHELL_HEAD = re.compile(r"(?P<indent>[ \t]*)(?:function[ \t]+(?P<fname>[A-Za-z_][\w:.-]*)"
                        r"(?:[ \t]*\(\))?|(?P<name>[A-Za-z_][\w:.-]*)[ \t]*\(\))"
                        r"[ \t]*(?P<brace>[{(])?[ \t]*(?:#.*)?")


def shell_functions(text, path):
    """Yields (name, first_line, lines) for every shell function whose body spans lines."""
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        m = SHELL_HEAD.fullmatch(line)
        if not m:
            continue
        name, opening, brace = m["fname"] or m["name"], number, m["brace"]
        if brace is None:  # the brace on a line of its own
            nxt = lines[number].strip() if number < len(lines) else ""
            if nxt not in ("{", "("):
                continue
            opening, brace = number + 1, nxt
        closing = re.compile(re.escape(m["indent"]) + re.escape("}" if brace == "{" else ")")
                             + r"([ \t;|&<>].*)?")
        end = next((k for k in range(opening, len(lines)) if closing.fullmatch(lines[k])), None)
        if end is None:
            sys.exit(f"check_sizes: {path}:{number}: function '{name}' has no closing brace at "
                     "the indentation of its first line")
        yield name, opening, end + 1 - opening


def script_kind(full):
    """python_functions or shell_functions for a script at FULL, or None for other files."""
    if full.endswith(".py"):
        return python_functions
    if full.endswith(".sh"):
        return shell_functions
    with open(full, "rb") as f:
        first = f.readline(200)
    if re.match(rb"#!.*\bpython", first):
        return python_functions
    if re.match(rb"#!.*\b(ba)?sh\b", first):
        return shell_functions
    return None


def measured_files(root):
    """Yields (path relative to ROOT, full path, function finder) for every measured file."""
    for d in CPP_DIRS + (SCRIPT_DIR,):
        for dirpath, subdirs, names in os.walk(os.path.join(root, d)):
            subdirs[:] = sorted(s for s in subdirs if s != "__pycache__")
            for name in sorted(names):
                full = os.path.join(dirpath, name)
                if d != SCRIPT_DIR:
                    finder = cpp_functions if name.endswith(CPP_SUFFIXES) else None
                else:
                    finder = script_kind(full)
                if finder:
                    yield os.path.relpath(full, root), full, finder


def check(root, allow, limit):
    """Prints every offender, and every allow-list entry that excuses none; returns how many of
    those there are, the offenders the allow-list excuses left out."""
    used = set()

    def allowed(path, function):
        hits = [(p, f) for p, f in allow if fnmatch.fnmatch(path, p) and (not f or f == function)]
        used.update(hits)
        return bool(hits)

    problems = 0
    for rel, full, finder in measured_files(root):
        with open(full, encoding="utf-8") as f:
            text = f.read()
        total = text.count("\n")
        if total > FILE_LIMIT:
            ok = allowed(rel, "")
            problems += not ok
            print(f"{rel}: {total} lines (limit {FILE_LIMIT}){' [allowed]' if ok else ''}")
        for fn, first, lines in finder(text, rel):
            if lines > limit:
                ok = allowed(rel, "") or allowed(rel, fn)
                problems += not ok
                print(f"{rel}:{first}: function '{fn}' {lines} lines (limit {limit})"
                      f"{' [allowed]' if ok else ''}")
    for path, function in allow:
        if (path, function) not in used:
            problems += 1
            print(f"allow-list entry '{path}{':' + function if function else ''}' excuses nothing: "
                  "remove it")
    return problems


def list_cpp(root, limit):
    """Prints "path name lines" for every function over LIMIT in the product's .cpp files."""
    for rel, full, finder in measured_files(root):
        if finder is cpp_functions and rel.endswith(".cpp"):
            with open(full, encoding="utf-8") as f:
                text = f.read()
            for fn, _, lines in finder(text, rel):
                if lines > limit:
                    print(rel, fn, lines)


def main(argv):
    root, allow_text, limit, mode = argv[0], argv[1], int(argv[2]), argv[3]
    allow = parse_allow_list(allow_text)
    if mode == "list":
        list_cpp(root, limit)
        return 0
    problems = check(root, allow, limit)
    if problems:
        print(f"check_sizes: {problems} over the limits and not on the allow-list, or on it and "
              "not over them (the allow-list is in scripts/check_sizes.sh)")
        return 1
    print("check_sizes: every function and file within the limits or allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
