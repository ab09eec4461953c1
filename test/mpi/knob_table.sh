#!/bin/sh
# The parameter table of docs/tuning.md (the rows between <!-- knobs:begin -->
# and <!-- knobs:end -->) must name every MCA parameter of coll/dfccl, and no
# other, with the default ompi_info reports. Only names and defaults are
# compared; contrib/dev/knob_rows.sh prints the rows afresh.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
readme=$top/docs/tuning.md
[ -r "$readme" ] || { echo "knob_table: cannot read $readme"; exit 1; }
grep -q '^<!-- knobs:begin -->' "$readme" && grep -q '^<!-- knobs:end -->' "$readme" ||
  { echo "knob_table: $readme has no <!-- knobs:begin --> ... <!-- knobs:end --> section"
    echo "(contrib/dev/knob_rows.sh prints its rows)"; exit 1; }

rows=$("$top/contrib/dev/knob_rows.sh") || exit 1
tmp=${TMPDIR:-/tmp}/knob_table.$$
mkdir "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# "name default" per row, the default normalised: no backticks, booleans as
# 0/1, numbers as numbers (300 and 300.000000 are one default)
normalise='
  function norm(v) {
    gsub(/`/, "", v); gsub(/^[ \t]+|[ \t]+$/, "", v)
    if (v == "true") return 1
    if (v == "false") return 0
    if (v ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/) return v + 0
    return v
  }'
sed -n '/^<!-- knobs:begin -->/,/^<!-- knobs:end -->/p' "$readme" | awk -F'|' "$normalise"'
  /^[ \t]*\|/ {
    name = $2; gsub(/^[ \t]*`|`[ \t]*$/, "", name)
    if (name !~ /^coll_dfccl_[a-z0-9_]+$/) {
      if (name ~ /coll_dfccl_/) {
        print "knob_table: malformed row: " $0 > "/dev/stderr"; bad = 1
      }
      next   # the header and its rule
    }
    print name, norm($3)
  }
  END { exit bad }' > "$tmp/rows" ||
  { echo "knob_table: rows of $readme not of the form | \`coll_dfccl_NAME\` | DEFAULT | meaning |"
    exit 1; }
sort "$tmp/rows" > "$tmp/readme"
printf '%s\n' "$rows" | awk -F'|' "$normalise"'
  { name = $2; gsub(/^[ \t]*`|`[ \t]*$/, "", name); print name, norm($3) }' | sort \
  > "$tmp/ompi_info"

if ! cmp -s "$tmp/readme" "$tmp/ompi_info"; then
  echo "knob_table: the parameter table of $readme differs from ompi_info"
  echo "(- docs/tuning.md row, + what ompi_info reports; contrib/dev/knob_rows.sh prints the rows):"
  diff -u "$tmp/readme" "$tmp/ompi_info" | sed -n '3,$p' | grep '^[-+]'
  exit 1
fi
echo "knob_table: $(wc -l < "$tmp/readme") parameters, names and defaults as ompi_info reports"
