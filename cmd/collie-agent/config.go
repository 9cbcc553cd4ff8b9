package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Config is collie-agent's configuration file, TOML.
type Config struct {
	// Title is the conversation's title.
	Title string `toml:"title"`
	// Question is the demo yes/no question the agent asks.
	Question QuestionConfig `toml:"question"`
}

// QuestionConfig describes the demo question.
type QuestionConfig struct {
	Title     string `toml:"title"`
	Rationale string `toml:"rationale"`
}

// defaultConfig is what the agent shows when it has no configuration file.
func defaultConfig(name string) Config {
	return Config{
		Title: "Demo conversation (" + name + ")",
		Question: QuestionConfig{
			Title:     "Deploy the demo to staging?",
			Rationale: "This is the demo question of collie-agent. Write a config file to change it.",
		},
	}
}

// loadConfig reads path; a missing file gives the defaults, and a file with
// unknown keys or bad syntax is refused with the line to fix.
func loadConfig(path, name string) (Config, error) {
	cfg := defaultConfig(name)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read the config: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			row, _ := sm.Errors[0].Position()
			return Config{}, fmt.Errorf("%s, line %d: unknown setting %q; fix the file (see collie-agent(1))", path, row, strings.Join(sm.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Config{}, fmt.Errorf("%s, line %d column %d: %s; fix the file or remove it to use the defaults", path, row, col, de.Error())
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if cfg.Question.Title == "" {
		return Config{}, fmt.Errorf("%s: question.title is empty; give the question a title", path)
	}
	return cfg, nil
}
