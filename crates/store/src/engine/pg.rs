//! The PostgreSQL engine: sqlx's pool. Arguments are bound with their
//! types (a null keeps the type it stands for); rows are read into the
//! port's engine-neutral [`Row`].

use std::borrow::Cow;
use std::sync::Arc;

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::{Column, Executor, Postgres, Row as _, TypeInfo, ValueRef};

use super::{Arg, Done, Kind, Row, Val};
use crate::StoreError;

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

fn build<'q>(sql: Cow<'q, str>, args: Vec<Arg<'q>>) -> PgQuery<'q> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.into_owned()));
    for arg in args {
        q = match arg {
            Arg::Int(v) => q.bind(v),
            Arg::Real(v) => q.bind(v),
            Arg::Text(v) => q.bind(v.into_owned()),
            Arg::Blob(v) => q.bind(v.into_owned()),
            Arg::Null(Kind::Int) => q.bind(None::<i64>),
            Arg::Null(Kind::Real) => q.bind(None::<f64>),
            Arg::Null(Kind::Text) => q.bind(None::<String>),
            Arg::Null(Kind::Blob) => q.bind(None::<Vec<u8>>),
        };
    }
    q
}

pub(crate) async fn execute<'e, 'q>(
    on: impl Executor<'e, Database = Postgres>,
    sql: Cow<'q, str>,
    args: Vec<Arg<'q>>,
) -> Result<Done, StoreError> {
    let done = build(sql, args).execute(on).await?;
    Ok(Done {
        rows: done.rows_affected(),
    })
}

pub(crate) async fn fetch<'e, 'q>(
    on: impl Executor<'e, Database = Postgres>,
    sql: Cow<'q, str>,
    args: Vec<Arg<'q>>,
    limit: Option<usize>,
) -> Result<Vec<Row>, StoreError> {
    let q = build(sql, args);
    let rows = if limit == Some(1) {
        q.fetch_optional(on).await?.into_iter().collect()
    } else {
        q.fetch_all(on).await?
    };
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let columns: Arc<[Box<str>]> = first
        .columns()
        .iter()
        .map(|c| Box::from(c.name()))
        .collect();
    rows.iter()
        .map(|r| Ok(Row::new(columns.clone(), values(r)?)))
        .collect()
}

/// A row's values, by the type PostgreSQL gives each column.
fn values(row: &PgRow) -> Result<Vec<Val>, StoreError> {
    let mut out = Vec::with_capacity(row.len());
    for i in 0..row.len() {
        let raw = row.try_get_raw(i)?;
        if raw.is_null() {
            out.push(Val::Null);
            continue;
        }
        let kind = raw.type_info().name().to_owned();
        out.push(match kind.as_str() {
            "INT8" => Val::Int(row.try_get::<i64, _>(i)?),
            "INT4" => Val::Int(i64::from(row.try_get::<i32, _>(i)?)),
            "INT2" => Val::Int(i64::from(row.try_get::<i16, _>(i)?)),
            "BOOL" => Val::Int(i64::from(row.try_get::<bool, _>(i)?)),
            "FLOAT8" => Val::Real(row.try_get::<f64, _>(i)?),
            "FLOAT4" => Val::Real(f64::from(row.try_get::<f32, _>(i)?)),
            "BYTEA" => Val::Blob(row.try_get::<Vec<u8>, _>(i)?),
            _ => Val::Text(row.try_get::<String, _>(i).map_err(|_| {
                StoreError::Decode(format!("column {i} has the unsupported type {kind}"))
            })?),
        });
    }
    Ok(out)
}
