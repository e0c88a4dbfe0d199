// multipart/form-data bodies (text fields and files), built in the test:
// the engine sends bytes, so the form is laid out here, as the Rust SDK's
// Multipart does, with a boundary that no part contains.

package wload

import (
	"bytes"
	"fmt"
	"strings"
)

// Multipart is a multipart/form-data body being built:
//
//	wload.Post(url).Multipart(wload.NewMultipart().Text("a", "1").File("f", "f.txt", "text/plain", data))
type Multipart struct{ parts []part }

// part is one field; filename and contentType are set for files only.
type part struct {
	name, filename, contentType string
	file                        bool
	data                        []byte
}

// NewMultipart starts an empty form.
func NewMultipart() *Multipart { return &Multipart{} }

// Text adds a text field.
func (m *Multipart) Text(name, value string) *Multipart {
	m.parts = append(m.parts, part{name: name, data: []byte(value)})
	return m
}

// File adds a file field with its file name and content type.
func (m *Multipart) File(name, filename, contentType string, data []byte) *Multipart {
	m.parts = append(m.parts, part{name: name, filename: filename, contentType: contentType, file: true, data: data})
	return m
}

// Finish is the content-type header's value and the body.
func (m *Multipart) Finish() (contentType string, body []byte) {
	boundary := m.boundary()
	var b bytes.Buffer
	for _, p := range m.parts {
		b.WriteString("--" + boundary + "\r\n")
		if p.file {
			fmt.Fprintf(&b, "content-disposition: form-data; name=\"%s\"; filename=\"%s\"\r\ncontent-type: %s\r\n\r\n",
				quote(p.name), quote(p.filename), p.contentType)
		} else {
			fmt.Fprintf(&b, "content-disposition: form-data; name=\"%s\"\r\n\r\n", quote(p.name))
		}
		b.Write(p.data)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return "multipart/form-data; boundary=" + boundary, b.Bytes()
}

// boundary is the first of a fixed sequence that no part's data contains,
// so that the same form always gives the same body.
func (m *Multipart) boundary() string {
	n := uint64(0x5eed)
	for {
		b := fmt.Sprintf("wload-boundary-%016x", n)
		clash := false
		for _, p := range m.parts {
			clash = clash || bytes.Contains(p.data, []byte(b))
		}
		if !clash {
			return b
		}
		n = n*6364136223846793005 + 1442695040888963407
	}
}

// quote escapes a field or file name for its quoted-string.
func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// Multipart sets a multipart/form-data body and its content type.
func (r *Request) Multipart(form *Multipart) *Request {
	ct, body := form.Finish()
	return r.Header("content-type", ct).WithBody(body)
}
