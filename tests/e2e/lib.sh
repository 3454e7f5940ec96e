# Shared helpers for the end-to-end tests (sourced). Each test gets a scratch directory and
# a small byte-level dataset made by `trainer data prepare` from generated text.
set -euo pipefail
trainer="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# make_byte_data DIR: deterministic English-like text -> byte-level train/val shards in DIR.
make_byte_data() {
  local dir="$1"
  mkdir -p "$dir"
  awk 'BEGIN { srand(7); split("the a whale sea ship captain white long of and to in was he it that his", w, " ");
         for (d = 0; d < 40; d++) { for (l = 0; l < 60; l++) { line = "";
           for (k = 0; k < 12; k++) line = line w[int(rand() * 17) + 1] " "; print line } print "\n\n\n" } }' \
    > "$dir/text.txt"
  "$trainer" data prepare --input "$dir/text.txt" --tokenizer byte --out "$dir" --val-fraction 0.1 --quiet >/dev/null
}

# losses FILE: "step loss" lines of the train records of a metrics file.
losses() { grep '"loss"' "$1" | sed -E 's/.*"step": ([0-9]+).*"loss": ([^,}]+).*/\1 \2/'; }
