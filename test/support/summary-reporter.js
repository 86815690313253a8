/**
 * Prints one plain closing line, `tests: N passed, N failed[, N skipped]`, after Jest's own
 * summary, so that tools that read a run's last line (CI) count the tests whatever the runner.
 * Plain CommonJS: Jest loads reporters without its transform.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    // A suite that failed to run (syntax error, failing hook) has no failed test of its own.
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line = `tests: ${results.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
    // Jest prints its own summary after every custom reporter: write ours last, at exit
    // (stdout writes are synchronous on Linux for files, pipes and terminals).
    process.once('exit', () => process.stdout.write(line));
  }
}

module.exports = SummaryReporter;
