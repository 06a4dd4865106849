# Sourced by the training tests that compare runs digit for digit: a log's iteration lines (and, with
# "validation", its validation lines too) without the wall-clock parts (timestamp, elapsed time, tokens/s).
#   numbers LOG [validation]
numbers() {
  local pattern="iteration +[0-9]+/"
  [ "${2:-}" = validation ] && pattern+="|validation loss at"
  grep -E "$pattern" "$1" |
    sed -E 's/^ \[[^]]*\]//; s/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ tokens per second: [0-9.]+ \|//'
}
