"""Research notes: a note decision after each executed step of the root loop, notes as
memories and files, and progressive synthesis of the notes in chunks (flows.<flow>.notes)."""
