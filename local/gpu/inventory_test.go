package gpu

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseInventory(t *testing.T) {
	inv, err := ParseInventory(" h100:2, A10G:1 ")
	if err != nil {
		t.Fatal(err)
	}
	want := Inventory{
		{Index: 0, UUID: "configured-0", Name: "h100", Type: "h100"},
		{Index: 1, UUID: "configured-1", Name: "h100", Type: "h100"},
		{Index: 2, UUID: "configured-2", Name: "a10g", Type: "a10g"},
	}
	if !reflect.DeepEqual(inv, want) {
		t.Fatalf("ParseInventory = %+v\nwant %+v", inv, want)
	}
	if got := inv.String(); got != "h100 ×2, a10g ×1" {
		t.Fatalf("String = %q", got)
	}
	if inv, err := ParseInventory("  "); err != nil || len(inv) != 0 || inv.String() != "none" {
		t.Fatalf("blank text: %v, %v", inv, err)
	}
}

func TestParseInventoryRefusesBadText(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"h100:x", `count "x" must be a whole number`},
		{":2", `"" is not a GPU type`},
		{"h100:0", `count "0" must be a whole number of cards, at least 1`},
		{"h100:-1", `count "-1"`},
		{"h100:1,,a10g:1", "entry 2 is empty"},
		{"h100:1,", "entry 2 is empty"},
		{"h100", `entry "h100" has no count`},
		{"h 100:1", `"h 100" is not a GPU type`},
	} {
		_, err := ParseInventory(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseInventory(%q) = %v; want an error containing %q", tc.text, err, tc.want)
		}
	}
}
