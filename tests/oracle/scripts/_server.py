"""A long-lived oracle interpreter: the reference's modules imported once, then one forked
child per job, so each job starts from the same state as a fresh interpreter would (no
job sees another's globals, seeds or thread settings) without paying the imports again
(about 8 CPU-s a job on 2 Zen 4 cores).

    python _server.py        # reads jobs from stdin: SCRIPT<TAB>ARGS.pt<TAB>OUT.pt<TAB>ERR.txt

For each job line it answers one line on stdout: the child's exit code (0: ``OUT.pt``
written; else ``ERR.txt`` holds the traceback). Nothing here runs a torch operation before
a fork: OpenMP's thread pool, once started, does not survive a fork.
"""

import importlib
import os
import sys
import traceback

from _entry import run

# What the scripts import (tests/oracle/scripts/*.py); a module that fails to import here
# fails in the job that needs it, with its own traceback.
PRELOAD = ("torch", "cosyvoice.llm.llm", "cosyvoice.flow.flow", "cosyvoice.flow.DiT.dit",
           "cosyvoice.hifigan.generator", "cosyvoice.cli.frontend", "cosyvoice.cli.model",
           "cosyvoice.utils.common", "torchaudio.compliance.kaldi", "hyperpyyaml",
           "transformers", "whisper", "onnxruntime", "oracle_model")


def main() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - reported by the job that needs it
            pass
    for line in sys.stdin:
        script, args_path, out_path, err_path = line.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:
            code = 0
            os.dup2(2, 1)  # a script's prints must not reach the answers' pipe
            try:
                os.chdir(os.path.dirname(out_path))  # as a fresh run's: the job's folder
                run(script, args_path, out_path)
            except BaseException:  # noqa: BLE001 - the traceback is the answer
                with open(err_path, "w") as f:
                    f.write(traceback.format_exc())
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
