//! Host ranges in a machine entry: `host = "node[1-16384]"` stands for the hosts `node1` to
//! `node16384`, each an entry of its own with the same role and `perf`, as Slurm writes a
//! list of nodes. One bracket group per name, holding numbers and ranges separated by commas
//! (`node[1-4,7,10-12]`); a bound written with leading zeros sets the width of every number
//! of its range (`node[001-128]` gives `node001` to `node128`). A large cluster of equal
//! machines is then one line of the plan, not one per machine.

/// At most this many hosts from one entry: a typo in a bound (`[1-1000000000]`) is an error,
/// not an allocation that takes the machine's memory.
pub(super) const MAX_HOSTS_PER_ENTRY: u64 = 10_000_000;

/// The hosts `host` stands for: itself when it has no bracket, else each name of its range,
/// in order. The error says what is wrong with the range.
pub(super) fn expand(host: &str) -> Result<Vec<String>, String> {
    let Some(open) = host.find('[') else {
        if host.contains(']') {
            return Err(format!("`{host}`: a `]` without its `[`"));
        }
        return Ok(vec![host.to_string()]);
    };
    let close = host[open..]
        .find(']')
        .map(|at| open + at)
        .ok_or_else(|| format!("`{host}`: a `[` without its `]`"))?;
    let (prefix, list, suffix) = (&host[..open], &host[open + 1..close], &host[close + 1..]);
    if suffix.contains(['[', ']']) || list.contains('[') {
        return Err(format!("`{host}`: one bracket group per host name"));
    }
    let mut ranges = Vec::new();
    let mut total = 0u64;
    for item in list.split(',') {
        let (low, high) = item.split_once('-').unwrap_or((item, item));
        let number = |s: &str| {
            s.parse::<u64>()
                .ok()
                .filter(|_| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| format!("`{host}`: `{item}` is not a number or a range a-b"))
        };
        let (a, b) = (number(low)?, number(high)?);
        if b < a {
            return Err(format!("`{host}`: the range `{item}` runs backwards"));
        }
        total = total.saturating_add(b - a + 1);
        if total > MAX_HOSTS_PER_ENTRY {
            return Err(format!(
                "`{host}`: more than {MAX_HOSTS_PER_ENTRY} hosts in one entry"
            ));
        }
        let width = if low.len() > 1 && low.starts_with('0') {
            low.len()
        } else {
            0
        };
        ranges.push((a, b, width));
    }
    let mut hosts = Vec::with_capacity(total as usize);
    for (a, b, width) in ranges {
        hosts.extend((a..=b).map(|k| format!("{prefix}{k:0width$}{suffix}")));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_gives_each_host_in_order() {
        assert_eq!(expand("pgs-4").unwrap(), vec!["pgs-4"]);
        assert_eq!(expand("n[1-3]").unwrap(), vec!["n1", "n2", "n3"]);
        assert_eq!(
            expand("n[1-2,7,10-11].lan").unwrap(),
            vec!["n1.lan", "n2.lan", "n7.lan", "n10.lan", "n11.lan"]
        );
        assert_eq!(expand("n[08-10]").unwrap(), vec!["n08", "n09", "n10"]);
        assert_eq!(expand("n[0-1]").unwrap(), vec!["n0", "n1"]);
        assert_eq!(expand("c2-w[1-16384]").unwrap().len(), 16_384);
    }

    #[test]
    fn a_bad_range_says_what_is_wrong() {
        let error = |host: &str| expand(host).unwrap_err();
        assert!(
            error("n[3-1]").contains("runs backwards"),
            "{}",
            error("n[3-1]")
        );
        assert!(error("n[1-").contains("without its `]`"));
        assert!(error("n1]").contains("without its `[`"));
        assert!(error("n[a-b]").contains("`a-b` is not a number"));
        assert!(error("n[]").contains("is not a number"));
        assert!(error("n[1,,2]").contains("is not a number"));
        assert!(error("n[-1]").contains("is not a number"));
        assert!(error("n[1-2][1-2]").contains("one bracket group"));
        assert!(error("n[1-20000000]").contains("more than 10000000 hosts"));
    }
}
