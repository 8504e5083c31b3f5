package command

import (
	"strings"
	"testing"
)

// TestRemoteUnknownGateway: a --gateway that names no paired gateway is
// answered with the names that exist.
func TestRemoteUnknownGateway(t *testing.T) {
	paired := &gatewaysFile{Default: "pi", Gateways: []pairedGateway{
		{Name: "pi", Addr: "192.0.2.1:18789", ID: "ABCD-EFGH-IJKL"},
		{Name: "attic", Addr: "192.0.2.2:18789", ID: "MNOP-QRST-UVWX"},
	}}
	tests := []struct {
		name string
		f    *gatewaysFile
		ref  string
		want string // the error; "" found
	}{
		{"by name", paired, "attic", ""},
		{"by id prefix", paired, "abcd", ""},
		{"by address", paired, "192.0.2.2:18789", ""},
		{"unknown name", paired, "x", `no paired gateway "x"; known: pi (default), attic`},
		{"none paired", &gatewaysFile{}, "x", `no paired gateway "x": pair with ` + "`openclaw pair`" + ` (none is paired yet)`},
		{"address never paired", paired, "192.0.2.9:18789", "192.0.2.9:18789 is not a paired gateway: pair with it first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := tt.f.find(tt.ref)
			switch {
			case tt.want == "" && (err != nil || g == nil):
				t.Errorf("find(%q): %v", tt.ref, err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("find(%q): %v; want %q", tt.ref, err, tt.want)
			}
		})
	}
}

// TestRemoteUnknownGatewayCommand: the same from the command line.
func TestRemoteUnknownGatewayCommand(t *testing.T) {
	doctorEnv(t)
	code, _, errOut := runCLI("--gateway", "nope", "status")
	if code != 1 || errOut != "openclaw: no paired gateway \"nope\": pair with `openclaw pair` (none is paired yet)\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
