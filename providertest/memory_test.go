package providertest

import (
	"testing"

	"github.com/sbxdev/sbx"
)

func TestMemoryInProcess(t *testing.T) {
	Run(t, Factory{
		New:      func(t *testing.T) sbx.Provider { return NewMemory(MemoryOptions{}) },
		Template: "base",
	})
}

func TestMemoryWithStateDir(t *testing.T) {
	Run(t, Factory{
		New: func(t *testing.T) sbx.Provider { return NewMemory(MemoryOptions{StateDir: t.TempDir()}) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			return NewMemory(p.(*Memory).opts)
		},
		Template: "base",
	})
}
