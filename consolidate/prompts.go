package consolidate

// The prompts are the Python tool's, verbatim (inventory §6.7, §6.8), so a
// model configured for it behaves the same for us.
const (
	ReflectSystemPrompt = "You distill a developer's past session notes for one project into durable, reusable memory. You are given several episodic notes, each a summary of one Claude Code session.\n\nReturn ONLY a JSON array, no prose. Each element is an object:\n{\"type\": \"semantic\" | \"procedural\", \"title\": <string>, \"body\": <string>}\n\nUse 'semantic' for durable facts, decisions, and preferences; use 'procedural' for repeatable how-tos and procedures. Merge points that recur across sessions into one entry. Omit one-off chatter, transient state, and anything specific to a single session. Keep each entry concise. Return an empty array [] if nothing is worth keeping. Never include secrets, API keys, tokens, or credentials."

	MergeSystemPrompt = "You consolidate a developer's durable memory notes for one project. You are given several notes, each with its id, type, title, and body.\n\nReturn ONLY a JSON array, no prose. Find groups of REDUNDANT notes (notes that state the same information, possibly in different words). For each group of 2 or more redundant notes, return one object:\n{\"action\": \"keep\", \"keeper_id\": <id>, \"superseded_ids\": [<id>, ...]}\n{\"action\": \"synthesize\", \"type\": \"semantic\" | \"procedural\", \"title\": <string>, \"body\": <string>, \"superseded_ids\": [<id>, ...]}\n\nUse 'keep' when one existing note already says everything the group says: put that note's id in keeper_id and EVERY OTHER note's id in superseded_ids. Use 'synthesize' when the notes are complementary and should be combined into one better note: write the new type/title/body and put ALL the originals' ids in superseded_ids. Leave genuinely distinct notes alone (do not force unrelated notes together). Return an empty array [] if nothing should be merged. Use only the ids given to you. Never include secrets, API keys, tokens, or credentials."
)

// Schemas for backends that can hold a reply to a JSON schema (the Claude
// Code CLI's --json-schema). Structured output must be an object, so the
// array the prompts ask for sits under one key; parse accepts both shapes.
const (
	reflectSchema = `{"type":"object","properties":{"notes":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string","enum":["semantic","procedural"]},"title":{"type":"string"},"body":{"type":"string"}},"required":["type","title","body"]}}},"required":["notes"]}`
	mergeSchema   = `{"type":"object","properties":{"groups":{"type":"array","items":{"type":"object","properties":{"action":{"type":"string","enum":["keep","synthesize"]},"keeper_id":{"type":"string"},"type":{"type":"string","enum":["semantic","procedural"]},"title":{"type":"string"},"body":{"type":"string"},"superseded_ids":{"type":"array","items":{"type":"string"}}},"required":["action","superseded_ids"]}}},"required":["groups"]}`
)
