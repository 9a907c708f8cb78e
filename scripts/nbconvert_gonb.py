# nbconvert configuration for executing GoNB (Go) notebooks headless.
# Loaded by scripts/run-notebooks.sh: python3 -m nbconvert --config scripts/nbconvert_gonb.py ...
#
# Why: GoNB reports only compile errors as cell errors. When a cell's program panics, calls
# os.Exit(1)/log.Fatal, or a `!` shell line fails, GoNB just writes "exit status N" (or
# "signal: killed") to the cell's stderr and the cell counts as a success. This hook turns those
# into cell errors too, so a notebook run fails at the first broken cell, and it puts the cell's
# outputs (the compiler's or the panic's message) into the error that nbconvert prints.
import html
import re

from nbclient.exceptions import CellExecutionError

# Last line GoNB writes when the process it ran (cell program or shell command) failed.
_PROCESS_FAILED = re.compile(r"^(\^C\n)?(exit status [1-9][0-9]*|signal: .+)$", re.M)
_TAG = re.compile(r"<style.*?</style>|<[^>]+>", re.S)


def _output_text(output):
    """Plain text of one cell output, for the error report."""
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        return "\n".join(output.get("traceback", [])) or f"{output.get('ename')}: {output.get('evalue')}"
    data = output.get("data", {})
    if "text/plain" in data:
        return data["text/plain"]
    if "text/html" in data:  # GoNB shows compile errors as HTML
        return html.unescape(_TAG.sub("", data["text/html"]))
    return ""


def fail_on_gonb_errors(cell, cell_index, execute_reply, **_):
    stderr = "".join(o.get("text", "") for o in cell.get("outputs", [])
                     if o.get("output_type") == "stream" and o.get("name") == "stderr")
    reply = (execute_reply or {}).get("content", {})
    failed_process = _PROCESS_FAILED.search(stderr)
    if reply.get("status") != "error" and not failed_process:
        return
    outputs = "".join(_output_text(o) for o in cell.get("outputs", []))
    outputs = re.sub(r"\x1b\[[0-9;]*m", "", outputs)  # drop terminal colours
    outputs = re.sub(r"\n[ \t]*(?=\n)", "", outputs)    # and blank lines (HTML leaves many)
    if reply.get("status") == "error":
        ename, evalue = reply.get("ename", "Error"), reply.get("evalue", "")
    else:
        ename, evalue = "GoNBProcessFailed", failed_process.group(2)
    report = (f"cell #{cell_index + 1} (counting from 1, markdown cells included) failed ({ename}: {evalue})\n"
              f"------------------ source\n{cell.source}\n"
              f"------------------ outputs\n{outputs.rstrip()}\n------------------")
    raise CellExecutionError(report, ename, evalue)


c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
c.ExecutePreprocessor.on_cell_executed = fail_on_gonb_errors
