//! Reading the history back: runs by filter (newest first), one run with
//! its record, the earlier runs of the same workload on the same target,
//! and pruning.

use rusqlite::{params_from_iter, types::Value as Sql, OptionalExtension, Row};

use crate::db::History;
use crate::entry::{Figure, Status};
use crate::error::Error;
use crate::fingerprint::{HostPrint, TargetPrint};

/// One recorded run as the history keeps it (its record aside).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// Its id.
    pub id: i64,
    /// When it began (RFC 3339 UTC).
    pub started: String,
    /// When it was written to the history.
    pub recorded: String,
    /// The command that made it (`run`, `sweep`, `ior`, `import`, …).
    pub source: String,
    /// The command line, word by word.
    pub command: Vec<String>,
    /// `run`, `meta` or `io500`.
    pub kind: String,
    /// The workload key.
    pub workload: String,
    /// The workload in words.
    pub workload_text: String,
    /// The tested directory.
    pub target: String,
    /// How it ended.
    pub status: Status,
    /// The command invocation it came from (a sweep's points share one).
    pub batch: Option<String>,
    /// The ioscale version that ran it.
    pub version: String,
    /// The host print's fingerprint.
    pub host_fingerprint: String,
    /// The host print.
    pub host: HostPrint,
    /// The target print's fingerprint.
    pub target_fingerprint: String,
    /// The target print.
    pub target_print: TargetPrint,
    /// Its figures.
    pub figures: Vec<Figure>,
}

impl RunRow {
    /// The headline figures (one per operation: bandwidth or rate; io500's
    /// scores).
    pub fn headlines(&self) -> impl Iterator<Item = &Figure> {
        self.figures.iter().filter(|f| f.headline)
    }

    /// Its figure of `metric` for `op`.
    pub fn figure(&self, op: &str, metric: &str) -> Option<&Figure> {
        self.figures
            .iter()
            .find(|f| f.op == op && f.metric == metric)
    }
}

/// Which runs `list` and `export` show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Runs on this target (exact path).
    pub target: Option<String>,
    /// Runs of this workload (a key or the start of one).
    pub workload: Option<String>,
    /// Runs on this host (exact name).
    pub host: Option<String>,
    /// Runs that began at or after this row time.
    pub since: Option<String>,
    /// Runs that began before this row time.
    pub until: Option<String>,
    /// Runs that ended so.
    pub status: Option<Status>,
    /// Runs of these ids (empty: any).
    pub ids: Vec<i64>,
    /// At most this many, newest first (`None`: all).
    pub limit: Option<usize>,
}

const COLUMNS: &str = "r.id, r.started, r.recorded, r.source, r.command, r.kind, r.workload,
    r.workload_text, r.target, r.status, r.batch, r.version,
    h.fingerprint, h.hostname, h.kernel, h.cpu_model, h.cpus, h.mem_bytes,
    t.fingerprint, t.path, t.fs_type, t.fs_source, t.device_model, t.mount_options, t.size_bytes";

const FROM: &str =
    "FROM runs r JOIN hosts h ON h.id = r.host_id JOIN targets t ON t.id = r.target_id";

fn row_of(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let command: String = r.get(4)?;
    let status: String = r.get(9)?;
    Ok(RunRow {
        id: r.get(0)?,
        started: r.get(1)?,
        recorded: r.get(2)?,
        source: r.get(3)?,
        command: serde_json::from_str(&command).unwrap_or_default(),
        kind: r.get(5)?,
        workload: r.get(6)?,
        workload_text: r.get(7)?,
        target: r.get(8)?,
        status: Status::parse(&status).unwrap_or(Status::Errors),
        batch: r.get(10)?,
        version: r.get(11)?,
        host_fingerprint: r.get(12)?,
        host: HostPrint {
            hostname: r.get(13)?,
            kernel: r.get(14)?,
            cpu_model: r.get(15)?,
            cpus: r.get(16)?,
            mem_bytes: r.get::<_, i64>(17)?.max(0) as u64,
        },
        target_fingerprint: r.get(18)?,
        target_print: TargetPrint {
            path: r.get(19)?,
            fs_type: r.get(20)?,
            fs_source: r.get(21)?,
            device_model: r.get(22)?,
            mount_options: r.get(23)?,
            size_bytes: r.get::<_, Option<i64>>(24)?.map(|s| s.max(0) as u64),
        },
        figures: Vec::new(),
    })
}

fn figure_of(r: &Row<'_>) -> rusqlite::Result<Figure> {
    Ok(Figure {
        op: r.get(0)?,
        metric: r.get(1)?,
        unit: r.get(2)?,
        value: r.get(3)?,
        lo: r.get(4)?,
        hi: r.get(5)?,
        reps: r.get(6)?,
        higher_is_better: r.get(7)?,
        headline: r.get(8)?,
    })
}

/// The WHERE clause and its values for `f`.
fn clause(f: &Filter) -> (String, Vec<Sql>) {
    let mut conds: Vec<String> = Vec::new();
    let mut vals: Vec<Sql> = Vec::new();
    let mut add = |cond: &str, v: Sql| {
        vals.push(v);
        conds.push(cond.replace('?', &format!("?{}", vals.len())));
    };
    if let Some(t) = &f.target {
        add("r.target = ?", Sql::Text(t.clone()));
    }
    if let Some(w) = &f.workload {
        // A prefix: `w-3f2a` finds `w-3f2a…` (LIKE's wildcards escaped).
        let esc = w
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        add(
            "r.workload LIKE ? ESCAPE '\\'",
            Sql::Text(format!("{esc}%")),
        );
    }
    if let Some(h) = &f.host {
        add("h.hostname = ?", Sql::Text(h.clone()));
    }
    if let Some(s) = &f.since {
        add("r.started >= ?", Sql::Text(s.clone()));
    }
    if let Some(u) = &f.until {
        add("r.started < ?", Sql::Text(u.clone()));
    }
    if let Some(s) = f.status {
        add("r.status = ?", Sql::Text(s.as_str().into()));
    }
    if !f.ids.is_empty() {
        let list: Vec<String> = f.ids.iter().map(|i| i.to_string()).collect();
        conds.push(format!("r.id IN ({})", list.join(",")));
    }
    let w = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    (w, vals)
}

impl History {
    /// The runs `f` selects, newest first, with their figures.
    pub fn list(&self, f: &Filter) -> Result<Vec<RunRow>, Error> {
        let (w, vals) = clause(f);
        let limit = f.limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
        let sql = format!("SELECT {COLUMNS} {FROM} {w} ORDER BY r.started DESC, r.id DESC{limit}");
        self.rows(&sql, vals)
    }

    fn rows(&self, sql: &str, vals: Vec<Sql>) -> Result<Vec<RunRow>, Error> {
        let mut st = self.conn().prepare(sql).map_err(|e| self.err(e))?;
        let mut rows: Vec<RunRow> = st
            .query_map(params_from_iter(vals), row_of)
            .and_then(|it| it.collect())
            .map_err(|e| self.err(e))?;
        for r in &mut rows {
            r.figures = self.figures(r.id)?;
        }
        Ok(rows)
    }

    fn figures(&self, id: i64) -> Result<Vec<Figure>, Error> {
        let mut st = self
            .conn()
            .prepare(
                "SELECT op, metric, unit, value, lo, hi, reps, higher_is_better, headline
                 FROM figures WHERE run_id = ?1 ORDER BY position",
            )
            .map_err(|e| self.err(e))?;
        let out = st
            .query_map([id], figure_of)
            .and_then(|it| it.collect())
            .map_err(|e| self.err(e));
        out
    }

    /// Run `id`.
    pub fn run(&self, id: i64) -> Result<RunRow, Error> {
        let sql = format!("SELECT {COLUMNS} {FROM} WHERE r.id = ?1");
        self.rows(&sql, vec![Sql::Integer(id)])?
            .pop()
            .ok_or(Error::NoRun(id))
    }

    /// The newest run's id, if any.
    pub fn newest(&self) -> Result<Option<i64>, Error> {
        self.conn()
            .query_row(
                "SELECT id FROM runs ORDER BY started DESC, id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Run `id`'s full record (JSON).
    pub fn record(&self, id: i64) -> Result<String, Error> {
        self.conn()
            .query_row("SELECT record FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(Error::NoRun(id))
    }

    /// The good runs (status `ok`) of `run`'s workload on its target that
    /// came before it, newest first, at most `limit`.
    pub fn earlier(&self, run: &RunRow, limit: Option<usize>) -> Result<Vec<RunRow>, Error> {
        let limit = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
        let sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE r.workload = ?1 AND r.target = ?2 AND r.status = 'ok'
             AND r.id != ?3 AND (r.started < ?4 OR (r.started = ?4 AND r.id < ?3))
             ORDER BY r.started DESC, r.id DESC{limit}"
        );
        self.rows(
            &sql,
            vec![
                Sql::Text(run.workload.clone()),
                Sql::Text(run.target.clone()),
                Sql::Integer(run.id),
                Sql::Text(run.started.clone()),
            ],
        )
    }

    /// Every run of `workload` on `target`, oldest first (any status).
    pub fn series(&self, workload: &str, target: &str) -> Result<Vec<RunRow>, Error> {
        let sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE r.workload = ?1 AND r.target = ?2
             ORDER BY r.started, r.id"
        );
        self.rows(
            &sql,
            vec![Sql::Text(workload.into()), Sql::Text(target.into())],
        )
    }
}

/// Which runs `prune` removes: those that match every criterion given.
#[derive(Debug, Clone, Default)]
pub struct Prune {
    /// Runs that began before this row time.
    pub before: Option<String>,
    /// Runs that are not among the newest N of their workload on their
    /// target.
    pub keep: Option<usize>,
    /// Runs that ended so.
    pub status: Option<Status>,
    /// Runs of these ids (empty: any).
    pub ids: Vec<i64>,
}

impl Prune {
    /// Whether it names any criterion (pruning with none would empty the
    /// history).
    pub fn is_empty(&self) -> bool {
        self.before.is_none() && self.keep.is_none() && self.status.is_none() && self.ids.is_empty()
    }

    fn clause(&self) -> (String, Vec<Sql>) {
        let mut conds: Vec<String> = Vec::new();
        let mut vals: Vec<Sql> = Vec::new();
        if let Some(b) = &self.before {
            vals.push(Sql::Text(b.clone()));
            conds.push(format!("started < ?{}", vals.len()));
        }
        if let Some(s) = self.status {
            vals.push(Sql::Text(s.as_str().into()));
            conds.push(format!("status = ?{}", vals.len()));
        }
        if let Some(n) = self.keep {
            conds.push(format!(
                "id NOT IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY workload, \
                 target ORDER BY started DESC, id DESC) AS k FROM runs) WHERE k <= {n})"
            ));
        }
        if !self.ids.is_empty() {
            let list: Vec<String> = self.ids.iter().map(|i| i.to_string()).collect();
            conds.push(format!("id IN ({})", list.join(",")));
        }
        (format!("WHERE {}", conds.join(" AND ")), vals)
    }
}

impl History {
    /// Removes the runs `p` selects (with their figures, and the host and
    /// target prints no run names any more) in one transaction; with
    /// `dry_run`, only counts them. Returns how many.
    pub fn prune(&mut self, p: &Prune, dry_run: bool) -> Result<usize, Error> {
        if p.is_empty() {
            return Ok(0);
        }
        let (w, vals) = p.clause();
        let path = self.path().to_path_buf();
        let sq = |e| Error::sqlite(&path, e);
        let tx = self
            .conn_mut()
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sq)?;
        let n: i64 = tx
            .query_row(
                &format!("SELECT count(*) FROM runs {w}"),
                params_from_iter(vals.clone()),
                |r| r.get(0),
            )
            .map_err(sq)?;
        if !dry_run {
            tx.execute(&format!("DELETE FROM runs {w}"), params_from_iter(vals))
                .map_err(sq)?;
            tx.execute_batch(
                "DELETE FROM hosts WHERE id NOT IN (SELECT host_id FROM runs);
                 DELETE FROM targets WHERE id NOT IN (SELECT target_id FROM runs);",
            )
            .map_err(sq)?;
            tx.commit().map_err(sq)?;
        }
        Ok(n as usize)
    }

    /// Gives the space of removed runs back to the file system (SQLite's
    /// VACUUM: the file is rewritten).
    pub fn vacuum(&self) -> Result<(), Error> {
        self.conn().execute_batch("VACUUM").map_err(|e| self.err(e))
    }
}
