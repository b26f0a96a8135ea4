//! What a realtime session stores of the provider's answers: a turn per
//! response, the assistant transcript items as messages (marked
//! interrupted when the user spoke over them, also after they were
//! stored), and the items kept for `playback.interrupted`.

use super::*;

impl Bridge {
    /// Store what was said in a response, then close its turn.
    pub(super) async fn end_turn(
        &mut self,
        live: &mut Live,
        response_id: &str,
        status: &str,
        interrupted: bool,
    ) -> Result<(), RuntimeError> {
        if interrupted {
            self.mark_interrupted(response_id);
        }
        self.store_items(Some(response_id), true).await?;
        let Some(turn_id) = live.turns.remove(response_id) else {
            return Ok(());
        };
        let completed = TurnCompleted {
            turn_id: Some(turn_id),
            interrupted,
            reason: None,
            status: Some(status.to_owned()),
            finish_reason: None,
            latency: None,
        };
        let update = SessionUpdate {
            turn_running: Some(false),
            ..SessionUpdate::default()
        };
        self.ctx
            .events
            .emit_with(vec![completed.into()], update)
            .await
    }

    /// Store the transcripts of `response_id`'s items: those finished, or
    /// (`all`) every one with text.
    pub(super) async fn store_items(
        &mut self,
        response_id: Option<&str>,
        all: bool,
    ) -> Result<(), RuntimeError> {
        for id in self.item_order.clone() {
            let Some(item) = self.items.get_mut(&id) else {
                continue;
            };
            if item.stored || item.response_id.as_deref() != response_id {
                continue;
            }
            let text = match (&item.final_text, all) {
                (Some(t), _) => t.clone(),
                (None, true) => item.text.clone(),
                (None, false) => continue,
            };
            item.stored = true;
            if text.trim().is_empty() {
                continue;
            }
            let mut m = message(MessageRole::Assistant, &text);
            m.id = item.message_id.clone();
            m.source = Some("audio".to_owned());
            m.interrupted = item.interrupted;
            if !m.interrupted && item.audio_bytes > 0 {
                item.stored_playing = true;
            }
            let mut event = MessageCompleted::of(&m);
            event.item_id = Some(id.clone());
            self.rt
                .append(&self.ctx, m, vec![event.into()], Durability::Queued)
                .await?;
        }
        let before = self.item_order.len();
        let items = &self.items;
        self.item_order
            .retain(|id| items.get(id).is_some_and(|i| !i.stored));
        if self.item_order.len() != before {
            // Answers with audio stay for `playback.interrupted` (truncation).
            self.items.retain(|_, i| !i.stored || i.audio_bytes > 0);
            // Only the last answers can still be playing.
            let mut playing: Vec<(String, usize)> = self
                .items
                .iter()
                .filter(|(_, i)| i.stored)
                .map(|(id, i)| (id.clone(), i.serial))
                .collect();
            if playing.len() > MAX_PLAYING_ITEMS {
                playing.sort_by_key(|(_, serial)| *serial);
                for (id, _) in &playing[..playing.len() - MAX_PLAYING_ITEMS] {
                    self.items.remove(id);
                }
            }
        }
        Ok(())
    }

    /// The user interrupted response `id`: its items are marked.
    pub(super) fn mark_interrupted(&mut self, response_id: &str) {
        for item in self.items.values_mut() {
            if item.response_id.as_deref() == Some(response_id) {
                item.interrupted = true;
            }
        }
    }

    /// Mark an answer stored before the user spoke over it (generation is
    /// faster than playback): the stored message is replaced in place.
    pub(super) async fn mark_stored_interrupted(
        &mut self,
        item_id: &str,
    ) -> Result<(), RuntimeError> {
        let Some(item) = self.items.get_mut(item_id) else {
            return Ok(());
        };
        if !std::mem::take(&mut item.stored_playing) {
            return Ok(());
        }
        let id = item.message_id.clone();
        self.rt
            .amend_message(&self.ctx, &id, |m| m.interrupted = true)
            .await?;
        Ok(())
    }

    pub(super) fn item(&mut self, item_id: &str, response_id: Option<&str>) -> &mut Item {
        if !self.items.contains_key(item_id) {
            self.item_order.push(item_id.to_owned());
            self.serial += 1;
        }
        let serial = self.serial;
        self.items
            .entry(item_id.to_owned())
            .or_insert_with(|| Item {
                message_id: new_id("msg"),
                response_id: response_id.map(str::to_owned),
                text: String::new(),
                final_text: None,
                audio_bytes: 0,
                interrupted: false,
                stored: false,
                stored_playing: false,
                serial,
            })
    }
}
