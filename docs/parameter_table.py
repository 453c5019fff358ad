"""The node's parameter table in docs/node.md, written from ``ros/parameters.py``.

``python docs/parameter_table.py`` rewrites the table between the markers in
docs/node.md; ``test/system/test_docs.py`` fails when the two differ, so the
documentation cannot drift from the one table the node validates against.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE_DOC = ROOT / "docs" / "node.md"
BEGIN = "<!-- parameter table: written by docs/parameter_table.py -->"
END = "<!-- end of parameter table -->"


def _cell(value):
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    text = value if isinstance(value, str) else repr(value)
    return "`" + text.replace("|", "\\|") + "`" if text else '`""`'


def markdown():
    """The table of every node parameter: name, default, whether it changes at run time, meaning."""
    sys.path.insert(0, str(ROOT))
    from soa_dynamics_ros.ros.parameters import PARAMETERS
    rows = ["| parameter | default | at run time | meaning |", "|---|---|---|---|"]
    for name, spec in PARAMETERS.items():
        default = spec.default
        if isinstance(default, list) and default == [""]:
            default = "[]"
        changes = "fixed at start" if spec.read_only else "settable"
        rows.append(f"| `{name}` | {_cell(default)} | {changes} | "
                    f"{spec.description.strip().replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def written(document):
    """``document`` with the table between the markers replaced by :func:`markdown`'s."""
    head, rest = document.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{markdown()}{END}{tail}"


if __name__ == "__main__":
    NODE_DOC.write_text(written(NODE_DOC.read_text()))
    print(f"wrote the parameter table of {NODE_DOC}")
