package bench

// When two measured times count as different: the one rule that every
// generated sentence ("within noise", "slower", "on par", "faster") uses.

// NoiseFloor is the smallest relative difference between two records'
// times that counts as a difference (see Differ): a twentieth.
const NoiseFloor = 0.05

// Differ reports whether two records' times differ beyond noise: their
// fastest runs and their median runs must both differ by more than
// NoiseFloor, in the same direction.
//
// The fastest run is the one least disturbed by whatever else the machine
// did; the median is the typical run. A difference that shows in both is
// not made by a few disturbed or lucky runs, however widely the other runs
// spread: a kernel that takes 1.3 times as long in both is slower, even on
// a busy machine. What is left within noise is a gap under the floor, a gap
// in the medians alone (one record's runs were disturbed more often), a gap
// in the fastest runs alone (a lucky run), and gaps of opposite sign (runs
// that fall into two modes). A record without a fastest run (MinMS 0) is
// judged by its median alone.
func Differ(a, b Record) bool {
	med := a.MedianMS / b.MedianMS
	fast := med
	if a.MinMS > 0 && b.MinMS > 0 {
		fast = a.MinMS / b.MinMS
	}
	up, down := 1+NoiseFloor, 1/(1+NoiseFloor)
	return med > up && fast > up || med < down && fast < down
}

// Slower reports whether a took longer than b beyond noise (Differ).
func Slower(a, b Record) bool { return Differ(a, b) && a.MedianMS > b.MedianMS }
