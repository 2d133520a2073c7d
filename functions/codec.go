package functions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sortie-run/sortie"
)

// MessageReader reads [sortie.Message] NDJSON lines. Blank lines are
// skipped; a trailing "\r" is ignored.
type MessageReader struct {
	br   *bufio.Reader
	line int // number of the last line read, from 1
	buf  []byte
}

// NewMessageReader returns a reader of the NDJSON messages in r.
func NewMessageReader(r io.Reader) *MessageReader {
	return &MessageReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next message, or io.EOF after the last one. A line over
// [sortie.MaxMessageBytes] or an invalid message gives a
// [*sortie.ValidationError] naming the field, with the line number in its
// reason; Next may be called again to read the lines after it. Read errors
// of the underlying reader are returned as they are.
func (r *MessageReader) Next() (*sortie.Message, error) {
	for {
		line, size, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if size > sortie.MaxMessageBytes {
			return nil, sortie.Invalidf("message", "line %d: %d bytes or more, limit %d (sortie.MaxMessageBytes)", r.line, size, sortie.MaxMessageBytes)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := sortie.DecodeMessage(line)
		if err != nil {
			return nil, atLine(r.line, err)
		}
		return m, nil
	}
}

// atLine puts the line number into a validation error's reason.
func atLine(n int, err error) error {
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return &sortie.ValidationError{Field: ve.Field, Reason: fmt.Sprintf("line %d: %s", n, ve.Reason)}
	}
	return fmt.Errorf("line %d: %w", n, err)
}

// readLine returns the next line without its "\n" or "\r\n" and its size.
// When the line is longer than MaxMessageBytes, only its size is known
// (at least MaxMessageBytes+1) and the rest of it is skipped.
func (r *MessageReader) readLine() (line []byte, size int, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		size += len(chunk)
		if size <= sortie.MaxMessageBytes+2 { // room for "\r\n"
			r.buf = append(r.buf, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && size > 0:
			// a last line without "\n"
		case err != nil:
			return nil, 0, err
		}
		r.line++
		line = bytes.TrimSuffix(bytes.TrimSuffix(r.buf, []byte("\n")), []byte("\r"))
		if size > sortie.MaxMessageBytes+2 {
			return nil, size, nil
		}
		return line, len(line), nil
	}
}

// WriteMessage validates m and writes it to w as one NDJSON line, in one
// Write call. It returns a [*sortie.ValidationError] for an invalid message
// or one whose line would exceed [sortie.MaxMessageBytes].
func WriteMessage(w io.Writer, m *sortie.Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if n := buf.Len() - 1; n > sortie.MaxMessageBytes {
		return sortie.Invalidf("message", "%d bytes encoded, limit %d (sortie.MaxMessageBytes)", n, sortie.MaxMessageBytes)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ReadInvocation reads an invocation from r: at most
// [sortie.MaxInvocationBytes]+1 bytes, then [sortie.DecodeInvocation], which
// refuses anything larger or invalid with a [*sortie.ValidationError].
func ReadInvocation(r io.Reader) (*sortie.Invocation, error) {
	b, err := io.ReadAll(io.LimitReader(r, sortie.MaxInvocationBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read invocation: %w", err)
	}
	return sortie.DecodeInvocation(b)
}
