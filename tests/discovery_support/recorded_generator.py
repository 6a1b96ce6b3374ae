"""A stand-in for the InferenceX matrix generator that answers from its recorded real output.

Called as the real one is called by `klaud discover`:
    python3 <this file> test-config --config-keys KEY --config-files FILE --runner-config RUNNERS
it prints the entries the real generator printed for KEY at the recorded commit
(`recorded-outputs.json` beside this file: tests/fixtures/discovery/generator-843c6254f.json or
a subset of its families in the same shape; no key is in both master files there), or refuses a key FILE does not hold or that it has no
recording of (exit 1, an error on stderr). FILE may be the whole master file or the family's
excerpt; it and RUNNERS must exist, as the real generator reads them.
"""

import json
import os
import sys


def main(argv):
    if len(argv) < 1 or argv[0] != "test-config":
        print("usage: generate_sweep_configs.py test-config ...", file=sys.stderr)
        return 2
    options = {}
    name = None
    for argument in argv[1:]:
        if argument.startswith("--"):
            name = argument
            options[name] = []
        elif name is not None:
            options[name].append(argument)
    keys = options.get("--config-keys", [])
    files = options.get("--config-files", [])
    runners = options.get("--runner-config", [])
    if len(keys) != 1 or len(files) != 1 or len(runners) != 1:
        print("error: one key, one config file and one runner config", file=sys.stderr)
        return 2
    for path in files + runners:
        if not os.path.isfile(path):
            print(f"FileNotFoundError: {path}", file=sys.stderr)
            return 1
    with open(files[0], encoding="utf-8") as handle:
        text = handle.read()
    if not any(line.split(":")[0].strip("\"'") == keys[0] for line in text.splitlines()):
        print(f"ValueError: Config key '{keys[0]}' not found in {files[0]}", file=sys.stderr)
        return 1
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "recorded-outputs.json"), encoding="utf-8") as handle:
        recorded = json.load(handle)["families"]
    # A key names one family: no key is in both master files at the recorded commit. The file
    # given may be the whole master file or the family's excerpt.
    matches = [name for name in recorded if name.rsplit(":", 1)[1] == keys[0]]
    family = recorded[matches[0]] if len(matches) == 1 else None
    if family is None:
        print(f"KeyError: '{keys[0]}' is not a key of {files[0]}", file=sys.stderr)
        return 1
    if family["exit"] != 0:
        print(family.get("stderr-last-line", "error"), file=sys.stderr)
        return family["exit"]
    json.dump(family["entries"], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
