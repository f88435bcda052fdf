#!/usr/bin/env bash
# Does the original τ³ tool chain accept our `tau export --format tau2` files, and does it
# score them exactly as we did?  Needs an installation of the original (tau2 1.0.1 at the
# pinned commit; Python 3.12) and the τ³ data; it is not part of `make test` because the
# original cannot be installed from a package registry at the pinned commit.
#
#   scripts/check_tau2_interchange.sh /path/to/tau2-venv [WORK_DIR]
#
# For airline, retail, mock and telecom it runs our oracle agent with the scripted user on
# every base task (4 trials), exports the runs, then with the original:
#   1. `tau2 submit verify-trajs`  (format, task set, trial count)
#   2. `tau2 evaluate-trajs -o`    (re-scores every simulation; retail's NL judge is our
#                                   fake judge on 127.0.0.1 that says "met", as our runs
#                                   used --judge-model assume-met)
#   3. compares every simulation's reward_info with ours, field by field
#   4. `tau2 submit prepare` + `tau2 submit validate` on airline, retail and telecom.
# Exits non-zero on the first disagreement.
set -euo pipefail

TAU2_VENV=${1:?usage: $0 /path/to/tau2-venv [WORK_DIR]}
WORK=${2:-$(mktemp -d)}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TAU=${TAU:-$HERE/.venv/bin/tau}
PY=${PY:-$HERE/.venv/bin/python}
: "${TAU3_BENCH_DATA:?set TAU3_BENCH_DATA to the tau2-bench data directory}"
export TAU2_DATA_DIR=$TAU3_BENCH_DATA/data LITELLM_LOCAL_MODEL_COST_MAP=True
mkdir -p "$WORK"
cd "$WORK"
echo "work dir: $WORK"

"$PY" -m tau_bench.fakes.process --responder tau_bench.fakes.nl_judge:all_met >judge.port &
JUDGE=$!
trap 'kill $JUDGE 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q PORT judge.port 2>/dev/null && break; sleep 0.1; done
PORT=$(awk '/PORT/{print $2}' judge.port)
[ -n "$PORT" ] || { echo "fake judge did not start" >&2; exit 1; }

for d in airline retail mock telecom; do
  rm -rf "runs/$d" "export/$d" "rescored/$d"
  "$TAU" run --env "tau3/$d" --agent-strategy oracle --user-strategy scripted \
    --judge-model assume-met --num-trials 4 --log-dir "runs/$d" >"run-$d.log" 2>&1
  "$TAU" export runs/$d/*.jsonl --format tau2 -o "export/$d"
  verify=$("$TAU2_VENV/bin/tau2" submit verify-trajs export/$d/*.json 2>&1 || true)
  echo "$d verify-trajs:"; echo "$verify" | grep -E "validation" || true
  # mock fails "Tasks validation" in the original itself: its two tasks with a message
  # history get a load-time timestamp, so their hash changes at every load.
  if [ "$d" != mock ] && ! echo "$verify" | grep -q "All files passed"; then
    echo "tau2 submit verify-trajs rejected the $d export" >&2; exit 1
  fi
  OPENAI_API_KEY=sk-fake OPENAI_API_BASE="http://127.0.0.1:$PORT/v1" \
    "$TAU2_VENV/bin/tau2" evaluate-trajs export/$d/*.json -o "rescored/$d" >/dev/null 2>&1
  "$PY" - "$d" <<'EOF'
import glob, json, sys
d = sys.argv[1]
ours = {s["id"]: s for s in json.load(open(glob.glob(f"export/{d}/*.json")[0]))["simulations"]}
theirs = {s["id"]: s for s in json.load(open(glob.glob(f"rescored/{d}/*.json")[0]))["simulations"]}
assert ours.keys() == theirs.keys(), f"{d}: simulations differ"
fields = ("reward", "reward_basis", "reward_breakdown", "db_check", "env_assertions",
          "action_checks", "communicate_checks")
bad = [(k, f) for k in ours for f in fields
       if ours[k]["reward_info"].get(f) != theirs[k]["reward_info"].get(f)]
print(f"{d}: {len(ours)} simulations re-scored by the original, {len(bad)} field differences")
sys.exit(1 if bad else 0)
EOF
done

rm -rf submission
printf 'oracle\nscripted\ntau-adapters\ntau-adapters\nqa@example.com\n' >answers.txt
printf '\n%.0s' $(seq 60) >>answers.txt  # the optional questions: defaults
"$TAU2_VENV/bin/tau2" submit prepare export/airline/*.json export/retail/*.json \
  export/telecom/*.json -o submission <answers.txt >prepare.log 2>&1
sub=$(find submission -name submission.json -printf '%h\n' | head -1)
"$TAU2_VENV/bin/tau2" submit validate "$sub" 2>&1 | grep -E "Submission validation" \
  || { echo "tau2 submit validate failed; see $WORK/prepare.log" >&2; exit 1; }
