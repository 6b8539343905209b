/**
 * Rules of the source itself: settings are read in one place (src/config.ts), and every function is
 * short enough to take in at once. Read with TypeScript's own parser, as the compiler sees the code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
  const full = path.join(dir, e.name);
  return e.isDirectory() ? files(full) : /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : [];
});
const sources = [...files(path.join(root, 'src')), ...files(path.join(root, 'web', 'board'))]
  .filter((f) => !f.endsWith('database.types.ts'))
  .map((file) => ({ file: path.relative(root, file), ast: ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true) }));

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  node.forEachChild((child) => visit(child, each));
}

describe('the source', () => {
  it('reads settings from the environment only in src/config.ts', () => {
    // Handing the environment on to a program Baton starts, and finding programs on the PATH, is no setting.
    const passedOn = new Set(['PATH', 'HOME']);
    const reads: string[] = [];
    for (const { file, ast } of sources) {
      if (file === path.join('src', 'config.ts')) continue;
      visit(ast, (node) => {
        if (!ts.isPropertyAccessExpression(node) && !ts.isElementAccessExpression(node)) return;
        if (node.expression.getText() !== 'process.env') return;
        const name = ts.isPropertyAccessExpression(node) ? node.name.text : node.argumentExpression.getText();
        if (!passedOn.has(name)) reads.push(`${file}:${ast.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${name}`);
      });
    }
    expect(reads).toEqual([]);
  });

  it('keeps the runtimes to their contract: nothing in src/runtimes/ imports the daemon (src/agent/) or the stack (src/stack/)', () => {
    const crossing: string[] = [];
    for (const { file, ast } of sources.filter((s) => s.file.startsWith(path.join('src', 'runtimes') + path.sep))) {
      visit(ast, (node) => {
        // Static imports and exports, and dynamic import() calls alike.
        const specifier = (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)
          ? node.moduleSpecifier.text
          : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])
            ? node.arguments[0].text : undefined;
        if (!specifier?.startsWith('.')) return;
        const target = path.relative(root, path.resolve(root, path.dirname(file), specifier));
        if ([path.join('src', 'agent'), path.join('src', 'stack')].some((dir) => target === dir || target.startsWith(dir + path.sep))) {
          crossing.push(`${file}:${ast.getLineAndCharacterOfPosition(node.getStart()).line + 1} imports ${specifier}`);
        }
      });
    }
    expect(crossing).toEqual([]);
  });

  it('has no function longer than 80 lines', () => {
    const long: string[] = [];
    for (const { file, ast } of sources) {
      visit(ast, (node) => {
        if (!ts.isFunctionLike(node) || !('body' in node) || !node.body) return;
        const [start, end] = [node.getStart(), node.getEnd()].map((at) => ast.getLineAndCharacterOfPosition(at).line);
        const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent) ? node.parent.name.getText() : 'a function');
        if (end! - start! + 1 > 80) long.push(`${file}:${start! + 1} ${name} (${end! - start! + 1} lines)`);
      });
    }
    expect(long).toEqual([]);
  });
});
