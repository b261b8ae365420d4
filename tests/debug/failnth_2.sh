# The second half of the fail-nth sweeps: tests/debug/failnth.sh says
# what they do and why the sweep runs in two halves.
# shellcheck source=SCRIPTDIR/failnth.sh
FAILNTH_HALF=2 . "$(dirname "$0")/failnth.sh"
