package locomo

import (
	"strings"
	"testing"
)

func TestConvertSmallConversation(t *testing.T) {
	sessions, questions, err := Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 2 {
		t.Fatalf("%d sessions", len(sessions))
	}
	s1 := sessions[0]
	wantBody := "# Chat session at 9:00 am on 1 May, 2023\n\n## Conversation\n- **Ann:** I adopted a greyhound named Pixel!\n- **Bo:** Congrats, Ann."
	if s1.ID != "locomo-c00-s01" || s1.Title != "locomo-c00-s01 (9:00 am on 1 May, 2023)" || s1.Body != wantBody {
		t.Errorf("session 1:\n%+v", s1)
	}
	if s2 := sessions[1]; s2.Title != "locomo-c00-s02" || !strings.HasPrefix(s2.Body, "# locomo-c00-s02\n") {
		t.Errorf("undated session: %+v", s2)
	}
	if len(questions) != 3 {
		t.Fatalf("%d questions", len(questions))
	}
	q0, q1, q2 := questions[0], questions[1], questions[2]
	if q0.ID != "locomo-c00-q0000" || q0.Case.Query != "What is the name of Ann's dog?" || strings.Join(q0.Case.Relevant, ",") != "locomo-c00-s01" || q0.Category != 4 {
		t.Errorf("q0 %+v", q0)
	}
	// First session of each evidence string only; missing sessions and malformed entries dropped.
	if strings.Join(q1.Case.Relevant, ",") != "locomo-c00-s02" {
		t.Errorf("q1 ground truth %v", q1.Case.Relevant)
	}
	if len(q2.Case.Relevant) != 0 || q2.Case.Group != "category 5" {
		t.Errorf("q2 %+v", q2)
	}
}

func TestGrepBaseline(t *testing.T) {
	sessions := []Session{
		{ID: "a", Body: "the pottery class and pottery wheel"},
		{ID: "b", Body: "a greyhound named pixel"},
		{ID: "c", Body: "class notes"},
	}
	got := Grep(sessions, "When does the pottery class start?", 10)
	if strings.Join(got, ",") != "a,c" {
		t.Errorf("grep ranking %v", got)
	}
	if Grep(sessions, "when is it", 10) != nil {
		t.Error("stopword-only query should return nothing")
	}
}
