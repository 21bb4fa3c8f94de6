package omprpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A Go struct's schema as invopop/jsonschema writes it: $defs and a $ref with a description
// beside it, additionalProperties false.
const goSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$ref": "#/$defs/Args",
  "$defs": {
    "Args": {"type": "object", "properties": {
      "file": {"$ref": "#/$defs/File", "description": "the file to edit"},
      "lines": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}
    }, "required": ["file"], "additionalProperties": false},
    "File": {"type": "object", "description": "a file", "properties": {"path": {"type": "string", "examples": ["a.go"]}}, "required": ["path"]}
  }
}`

func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestSanitizeSchemaInlinesRefsAndReportsWhatItDropped(t *testing.T) {
	s, err := SanitizeSchema(json.RawMessage(goSchema), 0)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, s.Schema, `{"type": "object", "required": ["file"], "properties": {
	  "file": {"type": "object", "description": "the file to edit", "properties": {"path": {"type": "string"}}, "required": ["path"]},
	  "lines": {"type": "array", "items": {"type": "integer"}}}}`)
	var paths []string
	for _, d := range s.Dropped {
		paths = append(paths, d.Path)
	}
	want := []string{"/$schema", "/$defs", "/$defs/Args/additionalProperties", "/$defs/Args/properties/lines/items/anyOf/1", "/$defs/File/properties/path/examples"}
	for _, w := range want {
		if !strings.Contains(strings.Join(paths, " "), w) {
			t.Fatalf("dropped %v lacks %s", paths, w)
		}
	}
	if len(paths) != len(want) {
		t.Fatalf("dropped %v, want %v", paths, want)
	}
}

func TestSanitizeSchemaErrors(t *testing.T) {
	_, err := SanitizeSchema(map[string]any{"properties": map[string]any{"me": map[string]any{"$ref": "#"}}}, 0)
	wantErr(t, err, ErrInvalidArgument, "recursive")
	if !strings.Contains(err.Error(), "recursive") {
		t.Fatalf("error %v does not say recursive", err)
	}
	_, err = SanitizeSchema(json.RawMessage(goSchema), 3)
	wantErr(t, err, ErrLimitExceeded, "max nodes")
	_, err = SanitizeSchema(json.RawMessage(`[1]`), 0)
	wantErr(t, err, ErrInvalidArgument, "an array")
	_, err = SanitizeSchema(json.RawMessage(`{"a":`), 0)
	wantErr(t, err, ErrInvalidJSON, "broken JSON")
	_, err = SanitizeSchema(nil, 0)
	wantErr(t, err, ErrInvalidArgument, "nil")
}

func TestSkillsFlagsPerAgentAndVersion(t *testing.T) {
	cases := []struct {
		opts  SkillsOptions
		flags []string
		tools []string
	}{
		{SkillsOptions{Flavor: "pi", Skills: "none"}, []string{"--no-skills"}, nil},
		{SkillsOptions{Flavor: "pi", AgentVersion: "0.73.1", Skills: []string{"/s/alpha"}, Tools: []string{"echo"}}, []string{"--no-skills", "--skill", "/s/alpha"}, []string{"echo", "read"}},
		{SkillsOptions{Flavor: "pi", AgentVersion: "0.37.2", Skills: "none"}, []string{"--no-skills"}, nil},
		{SkillsOptions{Flavor: "omp", Skills: []string{"git-*"}, Tools: []string{"read"}}, []string{"--skills=git-*"}, []string{"read"}},
		{SkillsOptions{Flavor: "omp", Skills: "all"}, []string{}, nil},
	}
	for _, c := range cases {
		got, err := SkillsFlags(c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if !reflect.DeepEqual(got.Flags, c.flags) || !reflect.DeepEqual(got.Tools, c.tools) {
			t.Fatalf("%+v: got %+v, want flags %v tools %v", c.opts, got, c.flags, c.tools)
		}
	}
	_, err := SkillsFlags(SkillsOptions{Flavor: "pi", Skills: []string{"alpha"}})
	wantErr(t, err, ErrInvalidArgument, "a name for pi 0.50+")
	_, err = SkillsFlags(SkillsOptions{Flavor: "pi", AgentVersion: "0.37.2", Skills: []string{"a"}})
	wantErr(t, err, ErrInvalidArgument, "a subset for pi before 0.50")
	_, err = SkillsFlags(SkillsOptions{Flavor: "omp", Skills: []string{"/s/alpha"}})
	wantErr(t, err, ErrInvalidArgument, "a path for omp")
	_, err = SkillsFlags(SkillsOptions{Flavor: "omp", Skills: 3})
	wantErr(t, err, ErrInvalidArgument, "a number")
}

func TestSkillsOptionShapesTheArgv(t *testing.T) {
	argv, err := BuildArgv(Options{Executable: "pi", Flavor: "pi", Tools: []string{}, Skills: []string{"./skills/a"}, Extra: map[string]any{"agent_version": "0.73.1"}})
	if err != nil {
		t.Fatal(err)
	}
	// 0.73.1 has no project trust: discovery goes off, the skills chosen stand.
	want := []string{"pi", "--mode", "rpc", "--tools", "read", "--no-skills", "--skill", "./skills/a", "--no-extensions", "--no-prompt-templates"}
	if !reflect.DeepEqual(argv, want) {
		t.Fatalf("argv %q, want %q", argv, want)
	}
	_, err = BuildArgv(Options{Skills: []string{"a"}, NoSkills: true})
	wantErr(t, err, ErrInvalidArgument, "skills and no_skills")
}

func TestSanitizeToolSchemasReachesTheAgent(t *testing.T) {
	rec := filepath.Join(tempDir(t), "session.jsonl")
	opts := fakeOptions()
	opts.RecordPath = rec
	opts.SanitizeToolSchemas = true
	opts.HostTools = []HostTool{{Name: "edit", Description: "Edit", Parameters: json.RawMessage(goSchema)}}
	c := start(t, opts)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SanitizeSchema(json.RawMessage(goSchema), 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n")[1:] {
		var entry struct {
			Dir   string `json:"dir"`
			Frame struct {
				Type  string `json:"type"`
				Tools []struct {
					Parameters json.RawMessage `json:"parameters"`
				} `json:"tools"`
			} `json:"frame"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatal(err)
		}
		if entry.Dir == "out" && entry.Frame.Type == "set_host_tools" {
			found++
			jsonEqual(t, entry.Frame.Tools[0].Parameters, string(want.Schema))
		}
	}
	if found != 1 {
		t.Fatalf("%d set_host_tools frames sent, want 1", found)
	}
}
