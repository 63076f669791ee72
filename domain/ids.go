package domain

// MaxIDLength is the longest identifier the protocol accepts, in bytes.
const MaxIDLength = 64

// ValidID reports whether s is an identifier of the protocol: 1 to 64 ASCII
// letters, digits, '_' or '-', starting with a letter or digit
// (^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
