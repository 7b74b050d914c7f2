// Package jsonbound refuses JSON whose shape would cost far more memory to
// decode than its size suggests, before it is decoded: a 9 MB snapshot of 3
// million empty GPUs took 8.25 GB to unmarshal into structs.
package jsonbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The longest array and deepest nesting any real gpuprobe document has:
// arrays hold GPUs, links, processes, PCI devices, samples (thousands at
// most).
const (
	MaxArray = 65536
	MaxDepth = 64
)

// Check streams the tokens of data and refuses an array longer than
// maxArray or nesting deeper than maxDepth. It costs one pass and O(depth)
// memory.
func Check(data []byte, maxArray, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay text: decoded as float64, a valid 1e700 was refused as
	// "not JSON" (fuzz audit); the bounds here are on shape, not values.
	dec.UseNumber()
	type level struct {
		array bool
		n     int
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		if len(stack) > 0 && stack[len(stack)-1].array {
			if d, ok := tok.(json.Delim); !ok || d == '[' || d == '{' {
				top := &stack[len(stack)-1]
				top.n++
				if top.n > maxArray {
					return fmt.Errorf("an array at offset %d holds more than %d elements", dec.InputOffset(), maxArray)
				}
			}
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '[', '{':
				stack = append(stack, level{array: d == '['})
				if len(stack) > maxDepth {
					return fmt.Errorf("nested deeper than %d levels at offset %d", maxDepth, dec.InputOffset())
				}
			default:
				stack = stack[:len(stack)-1]
			}
		}
	}
}
