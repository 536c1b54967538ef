//! The task directory of a fleet, in Redis (ARCHITECTURE.md "Tasks").
//!
//! Three keys per task, each written by its own writer:
//!
//! - `tern:task:v1:{<id>}`: a string, the owner's record (`SET`);
//! - `tern:task:v1:{<id>}:ans`: a hash of answer key to answer, each field
//!   set once (`HSETNX`), at most [`MAX_TASK_ANSWERS`] fields;
//! - `tern:task:v1:{<id>}:cancel`: the string `1` once cancelled.
//!
//! The braces make the id a Redis Cluster hash tag, so the three keys share
//! a slot and one script may touch them all; they also keep the kinds
//! apart whatever the id holds (a record key ends in `}`, the others in a
//! suffix), so no id's key is another id's.
//!
//! Every write is one Lua script, atomic on the server, that writes its
//! part and then gives every part of the task that exists the same expiry:
//! the latest of `now + ttl` and what each already had. So, as in
//! [`tern_seal::MemoryTaskStore`], the entry expires as one, never sooner
//! than any `ttl` passed for it, and answers do not outlive their record.
//! Expiries count on the server's clock.
//!
//! A read is one pipelined round trip, `GET` + `HGETALL` + `EXISTS`. Not a
//! `MULTI` transaction: Redis refuses every command queued in one while it
//! is at its memory limit, and reads must go on working there (writes fail
//! with [`StoreError::Full`]). Each part is read whole; a write landing
//! between two of them is seen by the later ones only, which the three
//! writers tolerate anyway, as they share no lock.

use std::fmt;
use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionManager;
use tern_seal::{BoxFuture, Durability, MAX_TASK_ANSWERS, StoreError, TaskEntry, TaskStore};
use tokio::time::timeout;

use crate::redis_store::{
    RedisConnectError, RedisOptions, connect_manager, describe, px, store_error,
};
use crate::tasks::{MAX_TASK_ANSWERS_BYTES, answers_full, check_answers, check_id, check_record};

/// Prefix of every task key: `tern:task:v1:{<id>}` and its `:ans` and
/// `:cancel` siblings. The version lets a future layout live beside this
/// one.
pub const TASK_KEY_PREFIX: &str = "tern:task:v1:";

/// Longest expiry handed to Redis, in ms (2^53 - 1, some 285,000 years):
/// the largest integer a Lua number holds exactly. Longer TTLs count as
/// this.
const MAX_TTL_MS: u64 = (1 << 53) - 1;

/// The write script. `KEYS`: record, answers, cancel. `ARGV[1]`: the
/// operation (`put`, `answer`, `cancel`); `ARGV[2]`: the ttl in ms; then the
/// operation's own arguments: `put` the record; `answer` the answer cap,
/// the byte cap, then key and answer pairs.
///
/// It returns the number of answers added (0 for `put` and `cancel`), or
/// -1 when the answers would pass the byte cap, in which case it wrote
/// nothing. Each part's old expiry is read before the write: `SET` clears
/// a key's TTL.
const WRITE: &str = r"
local target = tonumber(ARGV[2])
for i = 1, 3 do
  local left = redis.call('PTTL', KEYS[i])
  if left > target then target = left end
end
local op = ARGV[1]
local added = 0
if op == 'put' then
  redis.call('SET', KEYS[1], ARGV[3])
elseif op == 'cancel' then
  redis.call('SET', KEYS[3], '1')
elseif op == 'answer' then
  local cap = tonumber(ARGV[3])
  local byte_cap = tonumber(ARGV[4])
  local held = redis.call('HLEN', KEYS[2])
  local bytes = 0
  if held > 0 then
    for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
      bytes = bytes + redis.call('HSTRLEN', KEYS[2], field)
    end
  end
  local new = {}
  local seen = {}
  for i = 5, #ARGV, 2 do
    if held >= cap then break end
    local key = ARGV[i]
    if not seen[key] and redis.call('HEXISTS', KEYS[2], key) == 0 then
      new[#new + 1] = i
      held = held + 1
      bytes = bytes + #ARGV[i + 1]
    end
    seen[key] = true
  end
  if bytes > byte_cap then return -1 end
  for _, i in ipairs(new) do
    redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1])
  end
  added = #new
else
  return redis.error_reply('ERR unknown task operation')
end
for i = 1, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('PEXPIRE', KEYS[i], target)
  end
end
return added
";

/// A [`TaskStore`] shared by every instance on every host, through Redis.
///
/// [`Durability::Shared`]. Entries survive a restart of Redis only with AOF
/// on, and a failover can drop the newest writes; a lost entry makes its
/// task unknown to the instances that did not run it, and a lost answer or
/// flag is one the owner never sees. Run AOF and `noeviction` (checked at
/// [`connect`](Self::connect), as for [`crate::RedisReplayStore`]).
///
/// Answers come back from [`get`](TaskStore::get) **sorted by key** (byte
/// order), not in the order they arrived as from the memory store: a hash
/// keeps no order, and sorting makes the order the same on every read. An
/// empty record reads as no record, as in the memory store.
///
/// Commands go through one multiplexed [`ConnectionManager`], which
/// reconnects in the background; clones share it. Each call is bounded by
/// [`RedisOptions::command_timeout`]: while Redis is down, slow or out of
/// memory, calls return a [`StoreError`], never a made-up entry or
/// `Ok(None)`. After [`StoreError::Timeout`] a write may still have landed.
/// Values are bounded ([`crate::MAX_TASK_RECORD_BYTES`],
/// [`crate::MAX_TASK_ANSWER_KEY_BYTES`], [`MAX_TASK_ANSWERS_BYTES`]); past a
/// bound a call is refused with [`StoreError::Full`] and writes nothing.
#[derive(Clone)]
pub struct RedisTaskStore {
    manager: ConnectionManager,
    command_timeout: Duration,
}

impl RedisTaskStore {
    /// Connects to `url` (`redis://host:port/db`) and checks that the server
    /// will not evict entries, as [`crate::RedisReplayStore::connect`] does.
    ///
    /// # Errors
    ///
    /// [`RedisConnectError::EvictionPolicy`] unless the server runs with
    /// `maxmemory-policy noeviction` (or the check is skipped with
    /// [`RedisOptions::danger_skip_eviction_policy_check`]);
    /// [`RedisConnectError::Store`] when the server is unreachable.
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Self, RedisConnectError> {
        Ok(Self {
            manager: connect_manager(url, &options).await?,
            command_timeout: options.command_timeout,
        })
    }

    /// Runs the write script for task `id`; `args` follow the operation
    /// and ttl.
    async fn write(
        &self,
        id: &str,
        op: &'static str,
        ttl: Duration,
        args: impl FnOnce(&mut redis::Cmd),
    ) -> Result<i64, StoreError> {
        let [record, answers, cancel] = keys(id);
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(WRITE)
            .arg(3)
            .arg(record)
            .arg(answers)
            .arg(cancel)
            .arg(op)
            .arg(px(ttl).min(MAX_TTL_MS));
        args(&mut cmd);
        let mut conn = self.manager.clone();
        let reply = timeout(self.command_timeout, cmd.query_async::<Value>(&mut conn))
            .await
            .map_err(|_| StoreError::Timeout(format!("redis: task {op} timed out")))?
            .map_err(|e| store_error(&e))?;
        match reply {
            Value::Int(n) => Ok(n),
            other => Err(StoreError::Unavailable(format!(
                "redis: unexpected task {op} reply ({})",
                describe(&other)
            ))),
        }
    }
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl TaskStore for RedisTaskStore {
    fn put(
        &self,
        id: &str,
        record: Vec<u8>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_record(&id, &record)?;
            self.write(&id, "put", ttl, |cmd| {
                cmd.arg(record);
            })
            .await
            .map(drop)
        })
    }

    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<TaskEntry>, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_id(&id)?;
            let [record, answers, cancel] = keys(&id);
            let mut pipe = redis::pipe();
            pipe.cmd("GET")
                .arg(record)
                .cmd("HGETALL")
                .arg(answers)
                .cmd("EXISTS")
                .arg(cancel);
            let mut conn = self.manager.clone();
            let reply = timeout(
                self.command_timeout,
                pipe.query_async::<Vec<Value>>(&mut conn),
            )
            .await
            .map_err(|_| StoreError::Timeout("redis: task get timed out".into()))?
            .map_err(|e| store_error(&e))?;
            entry(reply)
        })
    }

    fn answer(
        &self,
        id: &str,
        answers: Vec<(String, Vec<u8>)>,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_answers(&id, &answers)?;
            let added = self
                .write(&id, "answer", ttl, |cmd| {
                    cmd.arg(MAX_TASK_ANSWERS).arg(MAX_TASK_ANSWERS_BYTES);
                    for (key, answer) in answers {
                        cmd.arg(key).arg(answer);
                    }
                })
                .await?;
            if added < 0 {
                return Err(answers_full());
            }
            Ok(())
        })
    }

    fn cancel(&self, id: &str, ttl: Duration) -> BoxFuture<'_, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(async move {
            check_id(&id)?;
            self.write(&id, "cancel", ttl, |_| {}).await.map(drop)
        })
    }

    fn durability(&self) -> Durability {
        Durability::Shared
    }
}

/// The record, answers and cancel keys of task `id`.
fn keys(id: &str) -> [String; 3] {
    let record = format!("{TASK_KEY_PREFIX}{{{id}}}");
    let answers = format!("{record}:ans");
    let cancel = format!("{record}:cancel");
    [record, answers, cancel]
}

/// Reads the pipelined replies of `get`; anything this store did not write fails
/// closed rather than pass for an entry.
fn entry(reply: Vec<Value>) -> Result<Option<TaskEntry>, StoreError> {
    let [record, answers, cancelled] = <[Value; 3]>::try_from(reply).map_err(|reply| {
        StoreError::Unavailable(format!(
            "redis: task get answered {} replies, not 3",
            reply.len()
        ))
    })?;
    let record = match record {
        Value::Nil => return Ok(None),
        Value::BulkString(bytes) if bytes.is_empty() => return Ok(None),
        Value::BulkString(bytes) => bytes,
        other => return Err(unexpected("record", &other)),
    };
    let pairs: Vec<(Value, Value)> = match answers {
        Value::Map(pairs) => pairs,
        Value::Array(flat) if flat.len() % 2 == 0 => {
            let mut pairs = Vec::with_capacity(flat.len() / 2);
            let mut flat = flat.into_iter();
            while let (Some(k), Some(v)) = (flat.next(), flat.next()) {
                pairs.push((k, v));
            }
            pairs
        }
        other => return Err(unexpected("answers", &other)),
    };
    let mut answers = Vec::with_capacity(pairs.len());
    for pair in pairs {
        match pair {
            (Value::BulkString(key), Value::BulkString(answer)) => {
                let key = String::from_utf8(key).map_err(|_| {
                    StoreError::Unavailable("redis: answer key is not UTF-8".into())
                })?;
                answers.push((key, answer));
            }
            (key, _) => return Err(unexpected("answer", &key)),
        }
    }
    answers.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let cancelled = match cancelled {
        Value::Int(n) => n != 0,
        other => return Err(unexpected("cancel flag", &other)),
    };
    Ok(Some(TaskEntry {
        record,
        answers,
        cancelled,
    }))
}

fn unexpected(what: &str, value: &Value) -> StoreError {
    StoreError::Unavailable(format!(
        "redis: unexpected task {what} ({})",
        describe(value)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_collide_across_kinds() {
        // "x}:ans" as an id must not name the answers of "x".
        let [record, ..] = keys("x}:ans");
        let [_, answers, _] = keys("x");
        assert_ne!(record, answers);
        assert_eq!(
            keys("ab"),
            [
                "tern:task:v1:{ab}".to_owned(),
                "tern:task:v1:{ab}:ans".to_owned(),
                "tern:task:v1:{ab}:cancel".to_owned()
            ]
        );
    }

    #[test]
    fn a_malformed_reply_fails_closed() {
        assert!(matches!(
            entry(vec![Value::Nil]),
            Err(StoreError::Unavailable(_))
        ));
        assert!(matches!(
            entry(vec![
                Value::BulkString(b"r".to_vec()),
                Value::Array(vec![Value::BulkString(b"k".to_vec())]),
                Value::Int(0)
            ]),
            Err(StoreError::Unavailable(_))
        ));
        assert_eq!(
            entry(vec![Value::Nil, Value::Array(vec![]), Value::Int(1)]),
            Ok(None)
        );
    }
}
