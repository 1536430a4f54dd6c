"""Small stdlib helpers shared by the deploy checks: metric names in PromQL, and the few YAML shapes
(Prometheus rule files, promtool test files) the checks read, without a YAML library."""
import re

# PromQL words that look like identifiers but are not series names.
_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool",
    "inf", "nan", "atan2",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"(?<![\w:.$])([A-Za-z_:][A-Za-z0-9_:]*)\b(\s*\()?")
_NUMBER_UNIT = re.compile(r"^\d")


def metric_names(expr):
    """The series names an expression reads (functions, keywords, label names and durations removed)."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGE.sub("", text)
    text = _GROUPING.sub("", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables outside strings ($__range in offsets, ...)
    names = set()
    for m in _IDENT.finditer(text):
        name, call = m.group(1), m.group(2)
        if call or name.lower() in _KEYWORDS or _NUMBER_UNIT.match(name):
            continue
        names.add(name)
    return names


def rule_entries(text):
    """(kind, name, expr, line) for each rule of a Prometheus rule file: kind is 'alert' or 'record'.

    Reads the subset of YAML the rule files use: `- alert: X` / `- record: X`, then `expr:` either inline
    (plain or quoted) or a block scalar (`|`, `>`) of more-indented lines."""
    lines = text.split("\n")
    entries = []
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*-\s*(alert|record):\s*(\S.*?)\s*$", line)
        if m:
            current = [m.group(1), m.group(2).strip("'\""), None, i + 1]
            entries.append(current)
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if m and current is not None and current[2] is None:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value in ("|", ">", "|-", ">-", "|+", ">+"):
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                current[2] = " ".join(b for b in block if b)
                continue
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1].replace('\\"', '"') if value[0] == '"' else value[1:-1].replace("''", "'")
            current[2] = value
        i += 1
    return [tuple(e) for e in entries]


def tested_alertnames(text):
    """Alert names that a promtool test file checks in alert_rule_test."""
    return set(re.findall(r"alertname:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)", text))
