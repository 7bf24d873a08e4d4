//! A request's `attributes` (join, party creation, party join): checked
//! against the rule set's declarations before anything is written.

use lambda_http::{Body, Error, Request, Response};
use serde_json::Value;
use shared::{MatchStore, PlayerId, TicketAttributes, World};
use tracing::field::Empty;

use super::errors::{finish, not_found_error, ok, ApiError, ErrorCode, ErrorDetails, Failure};
use super::request::{authorize, caller, check_method, invalid_field, json_body};
use super::{path_parameter, Route};

/// The client attributes of a request for `world`, as the scripts take
/// them (`None`: the world has no attributes and the request sent none).
/// 400 INVALID_ATTRIBUTES, naming the attribute, when one is unknown to the
/// world, trusted (only a server may write it), of the wrong type, out of
/// its bounds, or a required one is missing.
pub(super) fn attributes_for(
    store: &MatchStore,
    world: &World,
    value: Option<&Value>,
) -> Result<Option<String>, ApiError> {
    let value = value.filter(|v| !v.is_null());
    if world.attributes.is_empty() {
        return match value {
            None => Ok(None),
            Some(_) => Err(ApiError::new(
                ErrorCode::InvalidAttributes,
                format!("{} takes no attributes: leave attributes out", world.name),
            )
            .with(ErrorDetails::Field {
                field: "attributes",
            })),
        };
    }
    let catalog = &store.settings().attributes;
    let attributes = catalog.client_attributes(world, value).map_err(|e| {
        ApiError::new(ErrorCode::InvalidAttributes, e.to_string()).with(ErrorDetails::Attribute {
            field: "attributes",
            attribute: e.attribute.clone(),
        })
    })?;
    Ok(Some(attributes.encode(catalog)))
}

/// The body of a trusted attribute write.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AttributesBody {
    attributes: Value,
}

/// `data` of a trusted attribute write.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AttributesStored<'a> {
    player_id: &'a PlayerId,
    attributes: Value,
    previous_attributes: Value,
}

/// `PUT /v1/attributes/{playerId}`: replaces a player's trusted attributes
/// (those the rule set declares `"source": "trusted"`; `{}` clears them).
/// Only callers whose verified token carries `attributeStore.writerScope`
/// may; a malformed write is a 400 whoever sends it.
#[tracing::instrument(name = "http_put_attributes", skip_all, fields(caller = Empty))]
pub async fn put_attributes(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(put_attributes_inner(store, &req).await)
}

async fn put_attributes_inner(
    store: &MatchStore,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Attributes)?;
    let caller = caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let raw = path_parameter(req, "playerId").ok_or_else(|| not_found_error(req))?;
    let player = PlayerId::parse(&raw).map_err(|e| invalid_field("playerId", e))?;
    let body: AttributesBody = json_body(req)?;
    let catalog = &store.settings().attributes;
    let attributes = catalog.trusted_attributes(&body.attributes).map_err(|e| {
        ApiError::new(ErrorCode::InvalidAttributes, e.to_string()).with(ErrorDetails::Attribute {
            field: "attributes",
            attribute: e.attribute.clone(),
        })
    })?;
    authorize(req, Route::Attributes, store.settings())?;
    let previous = store
        .set_trusted_attributes(&player, &attributes.encode(catalog))
        .await?;
    // What the store held was written through this route: it decodes; an
    // entry a newer rule set no longer declares shows what still does.
    let previous = TicketAttributes::decode(catalog, &previous)
        .map(|p| p.to_json())
        .unwrap_or(Value::Null);
    Ok(ok(
        &format!("trusted attributes of {player} stored"),
        &AttributesStored {
            player_id: &player,
            attributes: attributes.to_json(),
            previous_attributes: previous,
        },
    ))
}
