#!/usr/bin/env bash
# Copy the demo into a fresh git repo and run five scripted experiments on it (a few seconds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)/experiment_demo"
cp -r "$here" "$work" && rm -rf "$work/run_demo.sh" "$work/__pycache__"
git -C "$work" init -q && git -C "$work" add -A
git -C "$work" -c user.name=demo -c user.email=demo@localhost commit -qm "demo start"
python="${PYTHON:-python3}"
# The evaluator runs inside the demo repo: a relative interpreter path must be made absolute
# (not resolved through symlinks: a venv's python is a symlink that must stay the venv's).
case "$python" in */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;; esac
"$python" -m ratchet_ray.cli experiment run --repo "$work" --editable model.py \
  --protected evaluate.py --protected proposals.yaml --evaluator "$python evaluate.py" \
  --proposer "script:$work/proposals.yaml" --max-iterations 6 --budget-s 120 --name demo
# The ledger as a Markdown table: iteration, status, candidate commit, scalar, best so far,
# noise margin, fix attempts, note.
awk -F'\t' 'function d(x) { return x == "" ? "-" : x }
  NR == 1 { print "| it | status | candidate | scalar | best | margin | fixes | note |";
            print "|---|---|---|---|---|---|---|---|"; next }
  { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, d(substr($5, 1, 8)), d($7),
           d($8), d($9), $14, d(substr($17, 1, 60)) }' "$work/results.tsv"
echo "target repo: $work"
