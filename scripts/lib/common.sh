# Shell functions shared by the scripts; sourced (`. scripts/lib/common.sh`) from the
# repository's root.

# The median of the numbers on standard input, one a line: the middle value, or the mean of
# the two middle values for an even count (printed with four decimals). Prints `nan` and
# returns 1 when there is none.
median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR == 0) { print "nan"; exit 1 }
              if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
