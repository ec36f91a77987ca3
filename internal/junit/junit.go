// Package junit writes JUnit XML test reports (the <testsuites> layout CI
// systems read).
package junit

import (
	"encoding/xml"
	"io"
	"strconv"
)

// Suites is the <testsuites> document.
type Suites struct {
	XMLName xml.Name `xml:"testsuites"`
	// Name is written as the name attribute when not empty.
	Name string `xml:"name,attr,omitempty"`
	// Totals writes Tests and Failures as the tests and failures attributes
	// of <testsuites>; without it they are left out.
	Totals   bool    `xml:"-"`
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Suites   []Suite `xml:"testsuite"`
}

// Suite is one <testsuite>.
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Time     string `xml:"time,attr"` // seconds, e.g. "1.500"
	Cases    []Case `xml:"testcase"`
}

// Case is one <testcase>; it passed when Failure is nil.
type Case struct {
	Name      string   `xml:"name,attr"`
	ClassName string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr,omitempty"`
	Failure   *Failure `xml:"failure,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure is a failed testcase's <failure>.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// MarshalXML writes <testsuites>, with the tests and failures attributes
// only when Totals is set.
func (d Suites) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	start := xml.StartElement{Name: xml.Name{Local: "testsuites"}}
	if d.Name != "" {
		start.Attr = append(start.Attr, xml.Attr{Name: xml.Name{Local: "name"}, Value: d.Name})
	}
	if d.Totals {
		start.Attr = append(start.Attr,
			xml.Attr{Name: xml.Name{Local: "tests"}, Value: strconv.Itoa(d.Tests)},
			xml.Attr{Name: xml.Name{Local: "failures"}, Value: strconv.Itoa(d.Failures)})
	}
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, s := range d.Suites {
		if err := e.EncodeElement(s, xml.StartElement{Name: xml.Name{Local: "testsuite"}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// Write writes doc as an indented XML document ending in a newline.
func Write(w io.Writer, doc Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
