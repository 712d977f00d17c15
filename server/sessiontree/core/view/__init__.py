"""sessiontree.core.view: the tree view model, the rows the agent's ``/tree`` selector shows.

The rules are those of the agent's selector (``docs/tree-view.md``). The view reads a
`source.TreeSource` (`adapters` gives one for a ``SessionManager`` or a list of entries);
`flatten` orders the rows and draws their art (`tree_art` cuts deep art short), `filters`
and `search` choose the visible rows (`progressive`: a big session's search in steps), `display` makes each row's text, `tool_calls`
resolves the call a tool result shows, `page` builds a page (`build_view`), `summaries`
the one-line `EntrySummary` of entries; `cache` keeps what a source's next page reuses.

Text is shown, never stored: display text, labels and the text a search matches have each
lone surrogate as U+FFFD (`format.jsonl.scrub_text`), so it prints and encodes as UTF-8.
"""

from .adapters import EntriesTreeSource, ManagerTreeSource, as_tree_source
from .display import display_text, extract_content, format_tool_call, normalize
from .filters import FILTER_MODES, FILTER_SUFFIXES, next_filter
from .flatten import active_path_ids
from .opening import kept_leaf_is
from .page import Row, ViewPage, build_view, window_start
from .progressive import continue_search, search_in_progress
from .search import searchable_text
from .source import TreeSource
from .summaries import EntrySummary, entry_summaries_bulk, entry_summary
from .warmup import (
    WARM_FILTER_MODES,
    opening_view_due,
    save_opening_view,
    warm_filters,
    warm_rows,
    warm_search,
)

__all__ = [
    "FILTER_MODES",
    "FILTER_SUFFIXES",
    "WARM_FILTER_MODES",
    "EntriesTreeSource",
    "EntrySummary",
    "ManagerTreeSource",
    "Row",
    "TreeSource",
    "ViewPage",
    "active_path_ids",
    "as_tree_source",
    "build_view",
    "continue_search",
    "display_text",
    "entry_summaries_bulk",
    "entry_summary",
    "extract_content",
    "format_tool_call",
    "kept_leaf_is",
    "next_filter",
    "normalize",
    "opening_view_due",
    "save_opening_view",
    "search_in_progress",
    "searchable_text",
    "warm_filters",
    "warm_rows",
    "warm_search",
    "window_start",
]
