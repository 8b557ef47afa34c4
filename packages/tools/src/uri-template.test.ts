import { describe, expect, it } from 'vitest';
import { UriTemplate } from './uri-template.ts';

describe('UriTemplate', () => {
  it('matches the URIs simple expansion makes, and hands the variables over decoded', () => {
    const template = new UriTemplate('notes://{folder}/{id}.json');
    expect(template.variables).toEqual(['folder', 'id']);
    expect(template.match('notes://inbox/42.json')).toEqual({ folder: 'inbox', id: '42' });
    expect(template.match('notes://a%2Fb/%E2%9C%93.json')).toEqual({ folder: 'a/b', id: '✓' });
  });

  it('matches nothing else: a reserved character, a bad escape, a different literal, an empty variable', () => {
    const template = new UriTemplate('notes://{folder}/{id}.json');
    for (const uri of [
      'notes://a/b/c.json',
      'notes://a/b.json?x',
      'notes://a/%zz.json',
      'notes://a/%ff.json',
      'notes://a/%00.json',
      'NOTES://a/b.json',
      'notes:///b.json',
      'notes://a/b.jsonx',
      'xnotes://a/b.json',
    ]) {
      expect(template.match(uri), uri).toBeNull();
    }
  });

  it('treats the literal parts as text, not as a pattern', () => {
    const template = new UriTemplate('x://a.b+(c)/{id}');
    expect(template.match('x://a.b+(c)/1')).toEqual({ id: '1' });
    expect(template.match('x://aXb+(c)/1')).toBeNull();
  });

  it('refuses what level 1 does not have', () => {
    for (const bad of ['x://{+path}', 'x://{a,b}', 'x://{id}/{id}', 'x://{id', 'x://plain', 'x://{}']) {
      expect(() => new UriTemplate(bad), bad).toThrow(TypeError);
    }
  });
});
