package remote

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// hostSet is the hosts a server serves: a name with any port, or a name
// with one port.
type hostSet struct {
	anyPort map[string]bool
	onPort  map[string]bool // "name:port"
}

// servedHosts gathers the listen address's host (unless it is a wildcard:
// 0.0.0.0 names no host a client may send), the localhost forms on
// loopback, and each --allowed-host.
func servedHosts(listenHost string, loopback bool, allowed []string) (hostSet, error) {
	s := hostSet{anyPort: map[string]bool{}, onPort: map[string]bool{}}
	if ip := net.ParseIP(listenHost); ip == nil || !ip.IsUnspecified() {
		s.anyPort[normalHost(listenHost)] = true
	}
	if loopback {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.anyPort[h] = true
		}
	}
	for _, a := range allowed {
		name, port, ok := splitHost(a)
		if !ok || name == "" || strings.ContainsAny(a, "/@?#* ") {
			return hostSet{}, &OptionError{Option: "--allowed-host", Reason: "takes a host name or address, with or without :port (mcp.example.com, 10.0.0.5:8443)"}
		}
		if port == "" {
			s.anyPort[name] = true
		} else {
			s.onPort[name+":"+port] = true
		}
	}
	return s, nil
}

// serves reports whether a Host header names a served host.
func (s hostSet) serves(header string) bool {
	name, port, ok := splitHost(header)
	if !ok || name == "" {
		return false
	}
	return s.anyPort[name] || port != "" && s.onPort[name+":"+port]
}

// splitHost splits "name", "name:port", "[v6]" or "[v6]:port" into a
// normal name and the port.
func splitHost(h string) (name, port string, ok bool) {
	if h == "" {
		return "", "", false
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") || strings.Count(h, ":") == 0 {
		return normalHost(h), "", true
	}
	name, port, err := net.SplitHostPort(h)
	if err != nil {
		return "", "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", false
	}
	return normalHost(name), port, true
}

// normalHost lowers a host name, drops a final dot and the brackets of an
// IPv6 address.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// normalOrigin checks an origin, scheme://host[:port] as browsers send it,
// and lowers it.
func normalOrigin(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}
