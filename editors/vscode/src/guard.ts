/**
 * How a command's failure reaches the person: a preview row's refusal as information, any other
 * error as an error message (and a line in the log); the command then returns undefined.
 */
import * as vscode from 'vscode';
import { errorText } from './daemonCheck';
import { PreviewRowError } from './views/preview';

export function guarded<A extends unknown[]>(
  fn: (...args: A) => Promise<unknown> | unknown,
  log?: (message: string) => void,
): (...args: A) => Promise<unknown> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      if (err instanceof PreviewRowError) {
        void vscode.window.showInformationMessage(`Session Tree: ${err.message}`);
        return undefined;
      }
      log?.(`command failed: ${errorText(err)}`);
      void vscode.window.showErrorMessage(`Session Tree: ${errorText(err)}`);
      return undefined;
    }
  };
}
