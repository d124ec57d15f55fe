#!/usr/bin/env python3
"""Lists the longest C++ functions in the tree (for the "no 260-line function" rule).

    scripts/function_lengths.py                 # top 10 outside build*/ and tests/
    scripts/function_lengths.py -n 30 --include-tests
    scripts/function_lengths.py --over 80       # every function longer than 80 lines
    scripts/function_lengths.py --max-function 100 --max-file-lines 600
                                                # the gate (tests/repo): exit 1 naming each
                                                # function or file over its limit

A function's length is the number of lines from the start of its declaration to its closing
brace. Functions are found by brace matching on *.cc, *.h and *.cu files after blanking
comments, string literals (raw strings too), character literals and preprocessor lines, so that
a brace inside any of those does not count. A brace opens a function body when the text before
it ends in a parameter list (plus qualifiers, a trailing return type or a constructor's
initializer list) and is not a control statement. Only outermost bodies are listed: lambdas and
local classes count toward the function they sit in. Standard library only; no compiler needed.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cc", ".h", ".cu")
CONTROL_WORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                 "alignof", "noexcept", "requires", "static_assert"}
TYPE_WORDS = re.compile(r"\b(class|struct|union|enum|namespace)\b")
# What may follow a parameter list before the body: cv/ref qualifiers, noexcept, override,
# final, mutable (lambdas), a trailing return type.
TRAILER = re.compile(r"^\s*(?:(?:const|volatile|noexcept|override|final|mutable|&&?|->.+)\s*)*$",
                     re.S)
NAME_BEFORE_PARAMS = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*"
                                r"(?:operator\s*(?:\(\)|[^\w\s(]+|\s\w+)|~?[A-Za-z_]\w*))\s*$")
MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9]*_?[A-Z0-9_]+$")
MEMBER_BRACE_INIT = "member brace initializer"
ACCESS_LABEL = re.compile(r"^\s*(?:public|private|protected)\s*:(?!:)")


def blank(text, start, end):
    """text[start:end] with every character but newlines turned into a space."""
    return re.sub(r"[^\n]", " ", text[start:end])


def strip_code(src):
    """Returns src with comments, literals and preprocessor lines blanked (offsets kept)."""
    out = []
    i, n = 0, len(src)
    line_start = True  # only whitespace so far on this line
    while i < n:
        c = src[i]
        if line_start and c == "#":
            j = i
            while j < n and src[j] != "\n":  # a directive, continued by trailing backslashes
                j += 2 if src[j] == "\\" and j + 1 < n else 1
            out.append(blank(src, i, j))
            i = j
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src, i, j))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(src, i, j))
            i = j
        elif c == '"' and is_raw_string_start(src, i):
            j = raw_string_end(src, i)
            out.append(blank(src, i, j))
            i = j
        elif c == '"' or (c == "'" and not is_digit_separator(src, i)):
            j = quoted_end(src, i, c)
            out.append(blank(src, i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def token_before(src, i):
    """The identifier/number characters immediately before position i."""
    j = i
    while j > 0 and (src[j - 1].isalnum() or src[j - 1] in "_'."):
        j -= 1
    return src[j:i]


def is_digit_separator(src, i):
    # 1'000'000: a quote inside a number literal is a C++14 digit separator.
    tok = token_before(src, i)
    return bool(tok) and tok[0].isdigit()


def is_raw_string_start(src, i):
    tok = token_before(src, i)
    return tok in ("R", "u8R", "uR", "UR", "LR")


def raw_string_end(src, i):
    open_paren = src.find("(", i)
    if open_paren < 0:
        return len(src)
    closing = ")" + src[i + 1:open_paren] + '"'
    j = src.find(closing, open_paren)
    return len(src) if j < 0 else j + len(closing)


def quoted_end(src, i, quote):
    j = i + 1
    while j < len(src):
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == quote or src[j] == "\n":  # an unterminated literal ends at the line
            return j + 1
        j += 1
    return j


def matching_open_paren(header, close):
    depth = 0
    for k in range(close, -1, -1):
        if header[k] == ")":
            depth += 1
        elif header[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def without_initializer_list(header):
    """Cuts a constructor's ": member_(x), ..." off: the first lone ':' after a ')'."""
    depth, seen_paren = 0, False
    for k, c in enumerate(header):
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
            seen_paren = seen_paren or c == ")"
        elif (c == ":" and depth == 0 and seen_paren and header[k + 1:k + 2] != ":"
              and header[k - 1:k] != ":"):
            return header[:k]
    return header


def function_name(header):
    """The function's name when `header` (the text before a '{') declares one, else None;
    MEMBER_BRACE_INIT when the '{' starts a member's braced initializer (S() : a_{1} {)."""
    header = ACCESS_LABEL.sub("", header)
    head = without_initializer_list(header).rstrip()
    if len(head) < len(header.rstrip()) and re.search(r"[\w>]$", header.rstrip()):
        return MEMBER_BRACE_INIT if function_name(head) else None
    close = head.rfind(")")
    if close < 0 or not TRAILER.match(head[close + 1:]) or "=" in head[close + 1:]:
        return None
    open_paren = matching_open_paren(head, close)
    if open_paren < 0:
        return None
    before = head[:open_paren]
    if TYPE_WORDS.search(before):
        return None
    m = NAME_BEFORE_PARAMS.search(before)
    if not m:
        return "<lambda>" if before.rstrip().endswith("]") else None
    name = " ".join(re.sub(r"\s*::\s*", "::", m.group(1)).split())
    if name in CONTROL_WORDS:
        return None
    if MACRO_NAME.match(name):  # a test macro: TEST_F(Suite, Name) names itself by its arguments
        name += "(" + " ".join(head[open_paren + 1:close].split()) + ")"
    return name


def declaration_start(code, begin, end):
    """Where the declaration in code[begin:end] starts: past blanks and an access label."""
    label = ACCESS_LABEL.match(code, begin, end)
    begin = label.end() if label else begin
    while begin < end and code[begin].isspace():
        begin += 1
    return begin


def functions_in(path):
    """Yields (line, length, name) for every outermost function body in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.read()
    code = strip_code(src)
    header_start = 0
    stack = []  # per open brace: (start line, name) for a function body, None otherwise
    in_function = 0
    in_member_init = 0  # braces of a member initializer: part of the constructor's header
    for i, c in enumerate(code):
        if in_member_init:
            in_member_init += {"{": 1, "}": -1}.get(c, 0)
            continue
        if c == "{":
            name = function_name(code[header_start:i]) if in_function == 0 else None
            if name == MEMBER_BRACE_INIT:
                in_member_init = 1
                continue
            if name is not None:
                start = declaration_start(code, header_start, i)
                stack.append((code.count("\n", 0, start) + 1, name))
                in_function += 1
            else:
                stack.append(None)
            header_start = i + 1
        elif c == "}":
            top = stack.pop() if stack else None
            if top is not None:
                in_function -= 1
                yield top[0], code.count("\n", 0, i) + 1 - top[0] + 1, top[1]
            header_start = i + 1
        elif c == ";" and in_function == 0:
            header_start = i + 1


def source_files(roots, include_tests, excluded):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            keep = []
            for d in sorted(dirnames):
                if d.startswith(".") or d.startswith("build") or d in excluded:
                    continue
                if not include_tests and d == "tests" and rel == ".":
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(dirpath, name)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*",
                        help="folders or files to scan (default: the repository)")
    parser.add_argument("-n", "--top", type=int, default=10, help="how many to list (default 10)")
    parser.add_argument("--over", type=int, default=None,
                        help="list every function longer than this many lines instead")
    parser.add_argument("--include-tests", action="store_true", help="scan tests/ too")
    parser.add_argument("--exclude", action="append", default=[], metavar="DIR",
                        help="a folder name to skip (repeatable); build*/ and .*/ always are")
    parser.add_argument("--max-function", type=int, default=None, metavar="N",
                        help="gate: fail (exit 1) when a function is longer than N lines")
    parser.add_argument("--max-file-lines", type=int, default=None, metavar="N",
                        help="gate: fail (exit 1) when a source file has more than N lines")
    args = parser.parse_args(argv)
    if args.max_function is not None or args.max_file_lines is not None:
        return gate(args, here)

    # Paths print relative to the repository by default, else to the current directory.
    base = os.path.dirname(here) if not args.roots else os.curdir
    roots = args.roots or [base]
    found = []
    for path in source_files(roots, args.include_tests, set(args.exclude)):
        rel = os.path.relpath(path, base)
        for line, length, name in functions_in(path):
            found.append((length, rel, line, name))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    chosen = [f for f in found if f[0] > args.over] if args.over is not None else found[:args.top]
    width = max((len(f"{f[1]}:{f[2]}") for f in chosen), default=0)
    for length, rel, line, name in chosen:
        print(f"{length:5d}  {f'{rel}:{line}':<{width}}  {name}")
    print(f"{len(found)} functions scanned; longest: {found[0][0] if found else 0} lines",
          file=sys.stderr)
    return 0


# Generated code only (none is checked in today): paths relative to the repository.
GATE_ALLOWED = set()


def gate(args, here):
    base = os.path.dirname(here) if not args.roots else os.curdir
    roots = args.roots or [base]
    over = []
    for path in source_files(roots, args.include_tests, set(args.exclude)):
        rel = os.path.relpath(path, base)
        if rel in GATE_ALLOWED:
            continue
        if args.max_file_lines is not None:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = sum(1 for _ in f)
            if lines > args.max_file_lines:
                over.append(f"{rel}: {lines} lines (limit {args.max_file_lines}): split it by concern")
        if args.max_function is not None:
            for line, length, name in functions_in(path):
                if length > args.max_function:
                    over.append(f"{rel}:{line}: {name} is {length} lines "
                                f"(limit {args.max_function}): give its parts names")
    for o in over:
        print(o)
    print(f"sizes: {len(over)} over the limits", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
