"""sessiontree.core.format: the session file format.

`jsonl` (the lenient parser, the line writer), `jscompat` (every JavaScript rule the
format and the views follow, once), `migrations` (numbered single-step upgrades),
`persistence` (what is done to an entry before it is written and after it is read),
`blobs` (the content-addressed store of externalized images), `backups` (the names of
the copies kept before a rewrite), `words` (counts in words: `1 entry`, `2 entries`).
"""
