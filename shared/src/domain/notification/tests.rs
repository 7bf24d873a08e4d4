//! Unit tests of outbox entries and server messages.

use super::*;

#[test]
fn notification_ids_parse_players_with_separators() {
    let id = NotificationId::parse("M|18f-2a").unwrap();
    assert_eq!(id.as_str(), "M|18f-2a");
    assert_eq!(
        id.kind(),
        &NotificationKind::MatchFound {
            match_id: MatchId::parse("18f-2a").unwrap(),
        }
    );
    let expired = NotificationId::parse("X|world2|p:1|x").unwrap();
    assert!(matches!(
        expired.kind(),
        NotificationKind::TicketExpired { player, .. } if player == "p:1|x"
    ));
    let replay = NotificationId::parse("C|18f-2a|L0SM9cOFvHcCIhw=").unwrap();
    assert!(matches!(
        replay.kind(),
        NotificationKind::MatchReplay { .. }
    ));
    assert!(matches!(
        NotificationId::parse("G|w|p").unwrap().kind(),
        NotificationKind::TicketRemoved { .. }
    ));
    assert_eq!(
        NotificationId::parse("N|42").unwrap().kind(),
        &NotificationKind::Note { note: 42 }
    );
    for bad in [
        "Q|x|y",
        "M|1-a|p",
        "M|Bad Id",
        "X|World|p",
        "X|w|",
        "C|1-a|a b",
        "N|",
        "N|+4",
        "N|4|x",
    ] {
        assert!(NotificationId::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn match_found_sheds_ticket_data_to_fit_one_message() {
    let participants: Vec<PlayerId> = (0..3)
        .map(|i| PlayerId::parse(&format!("p{i}")).unwrap())
        .collect();
    let mut data = serde_json::Map::new();
    for p in &participants {
        data.insert(
            p.to_string(),
            serde_json::json!({"blob": "x".repeat(50_000)}),
        );
    }
    let record = MatchRecord {
        match_id: MatchId::parse("1-a").unwrap(),
        world_type: WorldName::parse("w").unwrap(),
        participants,
        matched_at: 1,
        player_data: Some(data),
        ratings: None,
        spread: None,
        teams: None,
        team_difference: None,
        parties: None,
        region: None,
        latencies: None,
        worst_latency: None,
        attributes: None,
        rules: None,
        anchor: None,
        roles: None,
        anchor_wait_ms: None,
    };
    let json = ServerMessage::match_found(record.clone())
        .to_bounded_json()
        .unwrap();
    assert!(json.len() <= MAX_MESSAGE_BYTES, "{}", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["playerDataOmitted"], true);
    assert!(v.get("playerData").is_none());
    assert_eq!(v["participants"].as_array().unwrap().len(), 3);
    let small = MatchRecord {
        player_data: None,
        ..record
    };
    let v: serde_json::Value =
        serde_json::from_str(&ServerMessage::match_found(small).to_bounded_json().unwrap())
            .unwrap();
    assert!(v.get("playerDataOmitted").is_none());
}

#[test]
fn notes_read_the_messages_the_scripts_write() {
    let cancelled = ServerMessage::from_note(
        r#"{"type":"PARTY_CANCELLED","partyId":"w.1-2","worldType":"w","reason":"DISCONNECTED","by":"b"}"#,
    )
    .unwrap();
    assert_eq!(
        cancelled.to_json(),
        r#"{"type":"PARTY_CANCELLED","partyId":"w.1-2","worldType":"w","reason":"DISCONNECTED","by":"b"}"#
    );
    let expired = ServerMessage::from_note(r#"{"type":"TICKET_EXPIRED","worldType":"w"}"#).unwrap();
    assert_eq!(
        expired.to_json(),
        r#"{"type":"TICKET_EXPIRED","worldType":"w"}"#
    );
    for bad in [
        r#"{"type":"MATCH_FOUND","worldType":"w"}"#,
        r#"{"type":"TICKET_EXPIRED","worldType":"W"}"#,
        r#"{"type":"TICKET_EXPIRED","worldType":"w","extra":1}"#,
        "not json",
    ] {
        assert!(ServerMessage::from_note(bad).is_err(), "{bad}");
    }
}

#[test]
fn server_messages_have_a_type_tag() {
    let msg = ServerMessage::TicketExpired {
        world_type: WorldName::parse("world1").unwrap(),
    };
    assert_eq!(
        msg.to_json(),
        r#"{"type":"TICKET_EXPIRED","worldType":"world1"}"#
    );
    let found = ServerMessage::match_found(MatchRecord {
        match_id: MatchId::parse("m1").unwrap(),
        world_type: WorldName::parse("world1").unwrap(),
        participants: vec![PlayerId::parse("a").unwrap()],
        matched_at: 5,
        player_data: None,
        ratings: None,
        spread: None,
        teams: None,
        team_difference: None,
        parties: None,
        region: None,
        latencies: None,
        worst_latency: None,
        attributes: None,
        rules: None,
        anchor: None,
        roles: None,
        anchor_wait_ms: None,
    });
    assert_eq!(
        found.to_json(),
        r#"{"type":"MATCH_FOUND","matchId":"m1","worldType":"world1","participants":["a"],"matchedAt":5}"#
    );
}
