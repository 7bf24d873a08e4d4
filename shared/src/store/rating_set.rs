//! `lua/rating_set.lua`: write a player's rating to the trusted store.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{PlayerId, Rating, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Stores `player`'s rating for `world` (`None`: every world). The
    /// caller has checked the range and the caller's privilege. Returns the
    /// rating it replaced.
    pub async fn set_rating(
        &self,
        player: &PlayerId,
        world: Option<&WorldName>,
        rating: Rating,
    ) -> Result<Option<Rating>, StoreError> {
        let r = &self.settings().ratings;
        let mut inv = SCRIPTS.rating_set.invocation(self.keys(), &[]);
        inv.arg(world.map_or("*", WorldName::as_str))
            .arg(player.as_str())
            .arg(rating.value())
            .arg(r.min)
            .arg(r.max);
        let mut reply = Reply::new("rating_set.lua", self.invoke(&inv, true).await?)?;
        let previous = reply
            .optional_text("previous rating")?
            .map(|p| Rating::parse(&p))
            .transpose()
            .map_err(|e| StoreError::UnexpectedReply(format!("rating_set.lua: {e}")))?;
        reply.finish()?;
        Ok(previous)
    }
}
