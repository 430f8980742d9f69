package version

import "testing"

func TestTag(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":  "v1.2.3",
		"(devel)": "devel",
		"v0.0.0-20261128062439-0123456789ab+dirty": "v0.0.0-20261128062439-0123456789ab-dirty",
		"v2.0.0+incompatible":                      "v2.0.0-incompatible",
		"":                                         "devel",
	} {
		if got := Tag(v); got != want {
			t.Errorf("Tag(%q) = %q, want %q", v, got, want)
		}
	}
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	if got := Tag(string(long)); len(got) != 128 {
		t.Errorf("a 200-character version's tag has %d characters", len(got))
	}
}
