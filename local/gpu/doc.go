// Package gpu finds the host's NVIDIA GPUs and places sandboxes on them.
//
// gVisor's nvproxy gives a sandbox whole host devices: it time-slices a card
// between sandboxes but cannot partition it (MIG does not work under nvproxy,
// MPS across sandboxes is not ready). A fraction of a card (25, 50, 75 or 100
// percent) is therefore an allocation share that sbx keeps in its books: the
// Placer never lets the shares on one card add up to more than 100 percent,
// and billing charges for the share. It is not a hardware limit.
//
// The package has three parts:
//   - the inventory (inventory.go, discover.go): Discover asks nvidia-smi what
//     cards the host has; ParseInventory reads an inventory an operator (or a
//     test) names;
//   - placement (placer.go): a Placer hands out shares of cards to owners
//     (sandboxes) and takes them back;
//   - devices (devices.go): the host device nodes a placement needs, as OCI
//     devices for the sandbox's spec (their presence turns nvproxy on).
package gpu
