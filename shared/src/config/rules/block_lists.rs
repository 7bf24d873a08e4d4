//! The rule set's `blockLists` section.

use serde::Deserialize;

use crate::config::BlockLists;

/// `blockLists`, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct BlockListsSection {
    max_entries: Option<u64>,
}

impl BlockListsSection {
    pub(super) fn validate(self) -> Result<BlockLists, String> {
        let max = self
            .max_entries
            .unwrap_or(BlockLists::DEFAULT_MAX_ENTRIES as u64);
        if !(1..=BlockLists::MAX_ENTRIES as u64).contains(&max) {
            return Err(format!(
                "blockLists.maxEntries: must be 1..={}, got {max}",
                BlockLists::MAX_ENTRIES
            ));
        }
        Ok(BlockLists {
            max_entries: max as usize,
        })
    }
}
