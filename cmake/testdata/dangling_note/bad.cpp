// Fixture for the notes_dangling test (cmake/check_notes.cmake): the check
// must fail on this file and name the one reference below whose note is
// defined nowhere.
//
// Note [Defined fixture note]
// A note block; references to it, on one line or wrapped, are fine.

// See Note [Defined fixture note] and (Note [Defined
// fixture note]).
int fixture_value = 0;  // Note [Missing fixture note] is never defined.
