// Package nccl reads NCCL_DEBUG=INFO output (a log file, a pipe, or the
// streams of a command it runs) and keeps the facts a verdict on the job's
// transports needs: which network module each process chose, the
// connection lines by transport, the communicators and ranks, GDR, the
// WARNs and errors. check/ncclverdict judges those facts
// (state.NCCLFacts); this package only reads. Memory is bounded whatever
// the input (the caps in state.go); docs/nccl.md has the limits, the
// verdicts and the benchmark history.
//
// # Main types
//
//   - Analyzer: the state that spans lines (processes, threads,
//     communicators, de-duplication, torn records) and the entry points
//     (ReadFrom, Stream, Feed, Facts). Analyze and AnalyzeFiles wrap it.
//   - lineParser: turns the lines of one block into a batch, with no state
//     that depends on other lines, so that several run at once.
//   - lineScanner and rawRecord: find the records of a line (one, or
//     several on a folded or torn line) and peel the host:pid:tid [dev]
//     envelope; envMemo remembers envelopes read recently.
//   - event and Kind: what classify makes of a record's message (the kind,
//     and that kind's fields: a connection, a communicator, a net name).
//   - batch, item, fields and connItem: what a parser hands the merger. A connItem
//     is a lone connection record with an envelope, the common line of an
//     init log, in half an item's size.
//   - process, thread, commInst, rankStats (state.go): what the merger
//     keeps; dedupe: the fixed table of recent record hashes.
//   - Record and ParseLine: the parse of one line, for callers and fuzzing.
//
// # The path of a line
//
//  1. Input (input.go, input_file.go): a regular file is mapped or read
//     in blocks of whole lines (blockSize) by the parsers themselves; a
//     pipe is cut into blocks by one reader.
//  2. lineParser.block splits a block at newlines; lineParser.line takes
//     each line. fastConn tries the common connection line first: the
//     marker where the last line with the same first bytes had it
//     (predictMarker), the envelope from the memo, the connection parsed
//     in place into a connItem (or copied from connMemo, when the same
//     message was parsed recently). Any other line goes to the general
//     path.
//  3. The general path scans the line's records and classifies each, once
//     and in full (or takes what classify made of the same message
//     recently, kindMemo). A record of KindOther (most records of a job's log)
//     costs the search for markers along its line, a switch on the first
//     byte of its message, and a look in a small table of envelopes
//     already passed on (firstSight); only an envelope not seen recently
//     becomes an item. A record the verdict uses becomes an item, with
//     what classify read from it packed beside it (fields, or the
//     commInfo of a communicator line).
//     A line without records is passed on only if it could complete a torn
//     record or is a foreign error (keepPlain, which remembers its answer
//     for recent texts).
//  4. Analyzer.merge takes the batches in input order, on one goroutine:
//     each connItem and item finds its thread (by envelope memo token,
//     else by hash in the thread table), is de-duplicated (dedupe), and
//     applied (apply.go), with the fields the parser packed, to the
//     process, the communicator and the rank counters.
//  5. Analyzer.Facts turns the state into state.NCCLFacts.
package nccl
