package store

// stateNames are the states a job hash stores as one-digit codes
// (keys.FieldState): a hash holds a code as a small integer, 2 bytes
// instead of up to 13 for the name. lua/lib.lua (SCODE) writes them; the
// two lists must agree.
var stateNames = map[string]string{
	"1": "available", "2": "scheduled", "3": "running", "4": "retryable",
	"5": "completed", "6": "archived", "7": "quarantined", "8": "cancelled",
}

// StateName is the state a job hash's keys.FieldState holds: the name for
// a code, and anything else (a name stored before codes) as it is.
func StateName(stored string) string {
	if name, ok := stateNames[stored]; ok {
		return name
	}
	return stored
}
